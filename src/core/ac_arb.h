/* ac_arb.h — include Arb from FLINT >= 3 (<flint/arb.h>) or from Debian's
 * libflint-arb (<arb.h>), whichever configure found.  Internal header. */
#ifndef AC_ARB_H
#define AC_ARB_H
#ifdef HAVE_FLINT3_ARB
#include <flint/arb.h>
#include <flint/arb_mat.h>
#include <flint/fmpz_mat.h>
#else
#include <arb.h>
#include <arb_mat.h>
#include <flint/fmpz_mat.h>
#endif
#endif
