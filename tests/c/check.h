/* The C tests' one assertion: CHECK(cond, printf-format, ...) prints the failed condition and the
 * message and counts the failure in `failures`; main returns failures != 0. */
#ifndef MEMWALL_TESTS_C_CHECK_H
#define MEMWALL_TESTS_C_CHECK_H

#include <stdio.h>

static int failures = 0;
#define CHECK(cond, ...)                                                             \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fprintf(stderr, "\n");                                                   \
            ++failures;                                                              \
        }                                                                            \
    } while (0)

#endif
