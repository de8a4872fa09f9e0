/* attention_impl.h — the map of src/attention (not installed).  It declares
 * nothing: each file below has its own header, public (src/attncheck/) or
 * private (here).
 *
 * Files of src/attention/ (this map; tests/docs.sh checks it against
 * local.mk):
 *   one head (attncheck/head.h; paper 1, eqs. (1), (3)):
 *     head.c, head_impl.h  the logits and the softmax of one head in double,
 *                    at stage 0 and in Arb balls, and the certificate of
 *                    max|Softmax - P| for given weights (the pieces Theorem 1
 *                    and the multi-head layers share: head_impl.h)
 *     softmax.c, softmax.h  the one double-precision softmax of the library
 *   the multi-head layer (attncheck/multihead.h; paper 1, eq. (8)):
 *     multihead.c    the layer object: init, free, copy, initialisation
 *     mh_forward.c   the forward pass in double (blocking, threads) and the
 *                    naive reference kernel
 *     mh_gemm.c, mh_gemm.h  the register-tiled product of its small-layer
 *                    path
 *     mh_softmax.c, mh_softmax.h  the column softmax of its small-layer path
 *     mh_backward.c  the backward pass in double
 *     mh_certified.c the certified forward pass (stage 0, Arb balls)
 *     multihead_arb.h  the layers in Arb ball arithmetic
 *     mh_files.c     the Wq/Wk/Wv/Wo .npy stacks
 *     mh_impl.h      the internals mh_forward.c shares with mh_backward.c and
 *                    mh_certified.c
 *   attention_impl.h  this map
 *   test/            the unit tests, one Check program per file:
 *     test_head.c        the head against a naive loop and Arb, its
 *                        certificate's stages against each other and Arb;
 *     test_multihead.c   the layers: forward against the naive kernel,
 *                        backward against dual numbers, stage 0 against Arb,
 *                        the .npy stacks;
 *     test_mh_gemm.c     the tiled product against its twin, bit for bit;
 *     test_mh_softmax.c  the small-layer softmax against its twin and
 *                        ac_softmax_cols.
 */
#ifndef AC_ATTENTION_ATTENTION_IMPL_H
#define AC_ATTENTION_ATTENTION_IMPL_H
#endif /* AC_ATTENTION_ATTENTION_IMPL_H */
