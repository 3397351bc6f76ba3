#ifndef KEEPSAKE_CZSTD_SHIM_H
#define KEEPSAKE_CZSTD_SHIM_H

#include <zstd.h>

// Macros built from expressions, which Swift does not import.
static const unsigned long long KS_ZSTD_CONTENTSIZE_UNKNOWN = ZSTD_CONTENTSIZE_UNKNOWN;
static const unsigned long long KS_ZSTD_CONTENTSIZE_ERROR = ZSTD_CONTENTSIZE_ERROR;

#endif
