#include <cstdio>

#include "memwall.h"

int main() {
    std::printf("memwall %s\n", mw_version());
    return 0;
}
