#include "memwall.h"

extern "C" const char* mw_version(void) { return "0.1.0"; }
