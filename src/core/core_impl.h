/* core_impl.h — the map of src/core (not installed).  It declares nothing:
 * each file below has its own header, public (src/attncheck/) or private
 * (here); this one says where each primitive of the library lives.
 *
 * Files of src/core/ (this map; tests/docs.sh checks it against local.mk):
 *   common.c         error reports and dense matrices (attncheck/common.h)
 *   verdict.c        the filtered-predicate engine: PROVED, REFUTED or
 *                    UNDECIDED from stage 0 and Arb balls
 *                    (attncheck/verdict.h; doc/mathematics.md §2.1, §2.2)
 *   interval.c       stage-0 rigorous arithmetic in round-to-nearest:
 *                    directed operations, interval products, the rigorous
 *                    exp and the softmax enclosure (attncheck/interval.h;
 *                    §2.3, §2.4)
 *   imat_split.c, imat_split.h  products enclosed by one error-free split
 *                    (§2.3, "Split products")
 *   imat_cs.c, imat_cs.h        products whose radius costs O(n^2), by
 *                    Cauchy–Schwarz (§2.3, "Norm-bounded products")
 *   sum_exact.c, sum_exact.h    is a sum of doubles exactly a given double?
 *   ball.c, ball.h   between double matrices and Arb balls
 *   ac_arb.h         Arb from FLINT >= 3 or from Debian's libflint-arb
 *   fnv.h            the FNV-1a checksum of checkpoints and condition shards
 *   dyadic.c, dyadic.h  exact dyadic matrices, their ranks (§2.6)
 *   exp_kernel.h, exp_kernel.c  the exp kernels and which is which: the
 *                    fast kernel, the table kernel (the rigorous enclosure
 *                    is interval.c's)
 *   linalg.c         approximate and certified dense linear algebra:
 *                    pseudo-inverses, certified singular values and left
 *                    inverses, exact rank (attncheck/linalg.h; §2.5)
 *   linalg_lu.c, linalg_lu.h  X^-1 by LU in fixed panels over the threads
 *   rng.c            counter-based random streams and samplers
 *                    (attncheck/rng.h)
 *   rng_ars.c, rng_impl.h  the ARS-7 words of the block normals
 *   blas.c           OpenBLAS core detection and threads (attncheck/blas.h)
 *   core_impl.h      this map
 *   test/            the unit tests, one Check program per file, each
 *                    against an exact or higher-precision oracle:
 *     test_interval.c    stage-0 arithmetic and the rigorous exp (MPFR, Arb)
 *     test_verdict.c     the engine never proves a false claim (MPFR)
 *     test_imat_split.c  split products (exact Arb products)
 *     test_imat_cs.c     norm-bounded products (exact Arb products)
 *     imat_oracle.h      the hostile inputs and the exact oracle of the two
 *     test_sum_exact.c   exact sums (MPFR's correctly rounded sums)
 *     test_dyadic.c      exact dyadic arithmetic, ranks, null vectors
 *     test_exp.c         the exp kernels (MPFR) and their vector forms
 *     test_linalg.c      pseudo-inverses, singular values, exact rank
 *     test_linalg_lu.c   the rank step's LU inverse and certified left inverse
 *     test_rng.c         the random streams (statistical tests)
 *     test_rng_block.c   the block normals (Random123, their twin)
 *     test_blas.c        the OpenBLAS core choice
 */
#ifndef AC_CORE_CORE_IMPL_H
#define AC_CORE_CORE_IMPL_H
#endif /* AC_CORE_CORE_IMPL_H */
