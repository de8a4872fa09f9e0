/* fitp.c — Theorem 1 on a learned head: `attncheck train --task fit-p`
 * (attncheck/learned.h, doc/mathematics.md §6.5).  The instance (X, P) is
 * read, generated or given, and validated by Theorem 1's checks here,
 * above the training stack, which receives it in memory
 * (ac_trainer_init_fitp: src/nn depends on no theorem); after training, the
 * learned head (the best iterate) is certified with the certified
 * evaluation of a head (attncheck/head.h). */
#include <config.h>

#include <string.h>

#include "attncheck/head.h"
#include "attncheck/learned.h"
#include "attncheck/npy.h"
#include "attncheck/theorem1.h"
#include "attncheck/train.h"

/* m: a copy of the matrix given in memory, else read from path (if set) */
static int read_mat(ac_mat *m, const ac_mat *given, const char *path, ac_err *err)
{
    if (given)
        return ac_mat_copy(m, given, err);
    return path[0] ? ac_npy_read_mat(path, m, err) : AC_OK;
}

/* X and P: given (Xin, Pin), read from c's files, or generated (Gaussian X,
 * Dirichlet P: ac_t1_generate with fitp_d x fitp_n and the seed, whichever
 * is missing); *xname, *pname name them. */
static int load_instance(ac_mat *X, ac_mat *P, const char **xname, const char **pname,
                         ac_train_config *c, const ac_mat *Xin, const ac_mat *Pin, ac_err *err)
{
    int st;
    int have_x = Xin || c->x_path[0], have_p = Pin || c->p_path[0];
    if (!Xin && (st = ac_train_path_absolute(c->x_path, err)))
        return st;
    if (!Pin && (st = ac_train_path_absolute(c->p_path, err)))
        return st;
    *xname = Xin ? "X" : c->x_path[0] ? c->x_path : "Gaussian";
    *pname = Pin ? "P" : c->p_path[0] ? c->p_path : "Dirichlet";
    if ((st = read_mat(X, Xin, c->x_path, err)) || (st = read_mat(P, Pin, c->p_path, err)))
        return st;
    if (c->p_rows && !have_p)
        return ac_err_set_field(err, AC_EUSAGE, "p_rows,p_path",
                                "p_rows needs a P file (p_path): it transposes the P read");
    /* row-stochastic P (PyTorch's layout): the column-stochastic P is its transpose */
    if (c->p_rows && (st = ac_mat_transpose(P, err)))
        return st;
    size_t n = have_x ? X->cols : (have_p ? P->rows : c->fitp_n);
    size_t d = have_x ? X->rows : (c->fitp_d ? c->fitp_d : n);
    if (have_x && (X->rows == 0 || X->cols == 0))
        return ac_err_set(err, AC_EDATA, "%s: X is %zu x %zu; it needs at least one row and one "
                          "column", *xname, X->rows, X->cols);
    if (have_x && c->fitp_d && c->fitp_d != d)
        return ac_err_set_field(err, AC_EUSAGE, "fitp_d", "fitp_d %zu contradicts %s, which has "
                                "d = %zu rows", c->fitp_d, *xname, d);
    if (n == 0 || d == 0)
        return ac_err_set_field(err, AC_EUSAGE, "fitp_n,fitp_d",
                                "fitp_n and fitp_d must be at least 1");
    if (!have_x || !have_p) {
        ac_mat Xg = {0}, Pg = {0};
        if (!(st = ac_t1_generate(&Xg, &Pg, d, n, c->seed, err))) {
            if (!have_x) {
                *X = Xg;
                Xg.data = NULL;
            }
            if (!have_p) {
                *P = Pg;
                Pg.data = NULL;
            }
        }
        ac_mat_free(&Xg);
        ac_mat_free(&Pg);
        if (st)
            return st;
    }
    return AC_OK;
}

int ac_learn_fitp_init(ac_trainer *tr, const ac_train_config *cfg, const ac_mat *X,
                       const ac_mat *P, ac_err *err)
{
    ac_train_config c = *cfg;
    ac_mat Xi = {0}, Pi = {0};
    const char *xname = "X", *pname = "P";
    int st;
    memset(tr, 0, sizeof *tr);
    if (cfg->task != AC_TASK_FIT_P)
        return ac_err_set(err, AC_EUSAGE, "ac_learn_fitp_init needs the fit-p task");
    if (!(st = load_instance(&Xi, &Pi, &xname, &pname, &c, X, P, err)))
        st = ac_t1_validate(&Xi, xname, &Pi, pname, NULL, 0, "D0",
                            c.fitp_dk ? c.fitp_dk : Xi.rows, err);
    if (!st)
        st = ac_trainer_init_fitp(tr, &c, &Xi, xname, &Pi, pname, err);
    ac_mat_free(&Xi);
    ac_mat_free(&Pi);
    return st;
}

int ac_learn_fitp_certify(ac_cert *cert, const ac_trainer *tr, double tol,
                          const ac_schedule *sched, ac_err *err)
{
    ac_mat X = {0}, P = {0}, Wq = {0}, Wk = {0};
    int st = ac_trainer_fitp_instance(tr, &X, &P, &Wq, &Wk, err);
    if (!st) {
        st = ac_head_certify(cert, &X, &Wk, &Wq, &P, tol, sched, err);
        strncat(cert->quantity, " of the learned weights",
                sizeof cert->quantity - strlen(cert->quantity) - 1);
    }
    ac_mat_free(&X);
    ac_mat_free(&P);
    ac_mat_free(&Wq);
    ac_mat_free(&Wk);
    return st;
}
