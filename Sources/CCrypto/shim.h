#ifndef KEEPSAKE_CCRYPTO_SHIM_H
#define KEEPSAKE_CCRYPTO_SHIM_H

#include <openssl/evp.h>
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

#endif
