// The x86 vector intrinsics, for the sources that use them (softmax.cpp,
// linalg.cpp), with GCC 12's false warnings about them silenced.
#pragma once

#if defined(__AVX2__)
#include <immintrin.h>
#endif
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() and warn that
// it "may be used uninitialized" (or "is used uninitialized") wherever they are
// inlined (GCC bug 105593, fixed in GCC 13): a false positive in the
// compiler's own header. (Pragmas in a header reach the sources that include it.)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
