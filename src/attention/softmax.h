/* attention/softmax.h — the double-precision softmax of the library
 * (internal): the attention layers of Theorem 2 and of the trainer, the
 * head of Theorem 1 and the attention blocks of Theorem 3.2 all use it.
 * e^x is ac_exp_kernel (core/exp_kernel.h, relative error below 2u).  Two
 * fast forms of the same steps, each tested against its scalar twin:
 * attention/mh_softmax.h (columns of the small multi-head layers, with the
 * table exp of core/exp_kernel.h) and nn/attn_fused.h (rows of the
 * trainer's attention in AVX-512 vectors, nn_softmax_row).  The certified
 * softmaxes are ac_softmax_col_enclose (interval.h, stage 0) and
 * ac_arb_softmax_cols (core/ball.h, Arb). */
#ifndef ATTNCHECK_ATTENTION_SOFTMAX_H
#define ATTNCHECK_ATTENTION_SOFTMAX_H

#include <stddef.h>

/* Softmax of one row of len >= 1 entries, in place: a_j = e^(a_j - m) / s,
 * m = max_j a_j, s = sum_j e^(a_j - m) (vectorised sum), multiplied by 1/s. */
void ac_softmax_row(double *a, size_t len);

/* Column-wise softmax of the rows x cols row-major matrix Z, in place (each
 * column is one softmax group, max shift as above).  colmax and colsum are
 * cols scratch doubles.  Every inner loop runs along a row, across the
 * independent groups, so it vectorises without a reduction. */
void ac_softmax_cols(double *Z, size_t rows, size_t cols, double *colmax, double *colsum);

#endif /* ATTNCHECK_ATTENTION_SOFTMAX_H */
