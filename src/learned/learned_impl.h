/* learned_impl.h — the map of src/learned (not installed).  It declares
 * nothing: the module's functions are declared in attncheck/learned.h.
 *
 * Files of src/learned/ (this map; tests/docs.sh checks it against local.mk):
 *   t1_transition.c  Theorem 1 on learned heads: the learned transition of
 *                    rep-theorem --learn (doc/mathematics.md §6.5);
 *   fitp.c           train --task fit-p: its instance (read, generated,
 *                    validated as rep-theorem's) and the certificate of the
 *                    weights the trainer returns;
 *   students.c       Theorem 2 on learned layers: the students of separate
 *                    --student (§4.8);
 *   kappa.c          Theorem 3.2 on learned weights: kappa of the blocks of
 *                    trained heads (condition --model, §6.6);
 *   learned_impl.h   this map.
 * The module is tested through its commands (tests/cli_rep_learn.sh,
 * tests/cli_student.sh, tests/model_kappa.sh and the report) and
 * the unit tests of the training stack (src/nn/test/).
 */
#ifndef AC_LEARNED_IMPL_H
#define AC_LEARNED_IMPL_H
#endif
