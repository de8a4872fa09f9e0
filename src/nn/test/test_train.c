/* test_train.c — tasks, schedule, checkpoints and resume (attncheck/train.h).
 * (The JSON reader of checkpoint configurations, io/jsonparse.c, is tested
 * in src/io/test/test_jsonparse.c.)
 *
 * Oracles: an independent evaluator of ListOps expressions (ac_listops_eval,
 * a recursive parser written separately from the generator) and the limits
 * the generator promises; closed forms of the schedule; bit-identical
 * results of a run resumed from a checkpoint against an uninterrupted run;
 * corrupted checkpoints (truncated, altered, missing, mismatched) that must
 * be refused without changing the trainer; a teacher given in memory against
 * the same teacher read from its files (bit-identical training).
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attncheck/blas.h"
#include "attncheck/learned.h"
#include "attncheck/npy.h"
#include "attncheck/train.h"
#include "testutil.h"

static char tmpdir[256];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/test_train.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert(mkdtemp(tmpdir) != NULL);
}

static void rm_rf(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert(system(cmd) == 0);
}

/* ---------------------------------------------------------------- ListOps */

static size_t depth_of(const int32_t *t, size_t len)
{
    size_t d = 0, best = 0;
    for (size_t i = 0; i < len; i++) {
        if (t[i] >= AC_LISTOPS_MIN && t[i] <= AC_LISTOPS_SM)
            d++, best = d > best ? d : best;
        else if (t[i] == AC_LISTOPS_END)
            d--;
    }
    return best;
}

START_TEST(test_listops)
{
    int32_t tok[200];
    ac_err err;
    size_t counts[10] = {0}, nsamples = 3000, bad = 0;
    for (size_t i = 0; i < nsamples; i++) {
        size_t len;
        int label;
        size_t depth = 3 + i % 5, args = 3 + i % 4, maxl = 20 + i % 100, minl = 5;
        if (ac_listops_sample(tok, &len, &label, test_seed_value, 7, i, depth, args, minl, maxl,
                              &err) != AC_OK) {
            bad++;
            continue;
        }
        bad += len < minl || len > maxl || label < 0 || label > 9;
        bad += ac_listops_eval(tok, len) != label;
        /* operator nesting: the root is at depth 1, leaves may sit at depth
         * max_depth, so at most max_depth - 1 nested operators */
        bad += depth_of(tok, len) > depth - 1;
        counts[label]++;
        /* determinism */
        int32_t tok2[200];
        size_t len2;
        int label2;
        bad += ac_listops_sample(tok2, &len2, &label2, test_seed_value, 7, i, depth, args, minl,
                                 maxl, &err) != AC_OK ||
               len2 != len || label2 != label || memcmp(tok, tok2, len * sizeof *tok) != 0;
    }
    ck_assert_msg(bad == 0, "%zu ListOps examples wrong (length, label, depth, determinism; seed %llu)", bad,
                  (unsigned long long)test_seed_value);
    for (int v = 0; v < 10; v++)
        ck_assert_msg(counts[v] > 0, "label %d never drawn in %zu examples", v, nsamples);
    /* impossible ranges are refused */
    size_t len;
    int label;
    ck_assert_int_eq(ac_listops_sample(tok, &len, &label, 1, 1, 1, 1, 10, 5, 100, &err), AC_EDATA);
    ck_assert_int_eq(ac_listops_sample(tok, &len, &label, 1, 1, 1, 3, 1, 5, 100, &err), AC_EUSAGE);
    /* the evaluator on hand-made expressions: [MED 3 1 4 1 ] = int(2.0) = 2,
     * [SM 9 [MAX 7 2 ] ] = 16 mod 10 = 6, [MED 1 2 ] = int(1.5) = 1 */
    int32_t e1[] = {AC_LISTOPS_MED, 5, 3, 6, 3, AC_LISTOPS_END};
    int32_t e2[] = {AC_LISTOPS_SM, 11, AC_LISTOPS_MAX, 9, 4, AC_LISTOPS_END, AC_LISTOPS_END};
    int32_t e3[] = {AC_LISTOPS_MED, 3, 4, AC_LISTOPS_END};
    int32_t e4[] = {AC_LISTOPS_MIN, 3, 4};
    /* [MIN 5 [SM 3 4 ] 9 ] = min(5, 7, 9) = 5 */
    int32_t e5[] = {AC_LISTOPS_MIN, 7, AC_LISTOPS_SM, 5, 6, AC_LISTOPS_END, 11, AC_LISTOPS_END};
    ck_assert_int_eq(ac_listops_eval(e5, 8), 5);
    ck_assert_int_eq(ac_listops_eval(e1, 6), 2);
    ck_assert_int_eq(ac_listops_eval(e2, 7), 6);
    ck_assert_int_eq(ac_listops_eval(e3, 4), 1);
    ck_assert_int_eq(ac_listops_eval(e4, 3), -1);
}
END_TEST

/* ---------------------------------------------------------------- schedule, config */

START_TEST(test_schedule)
{
    ac_train_config c;
    ac_train_config_default(&c, AC_TASK_TEXT);
    c.steps = 100;
    c.warmup = 10;
    c.lr = 1.0;
    c.min_lr = 0.1;
    ck_assert(fabs(ac_train_lr(&c, 1) - 0.1) < 1e-15);
    ck_assert(fabs(ac_train_lr(&c, 10) - 1.0) < 1e-15);
    ck_assert(fabs(ac_train_lr(&c, 100) - 0.1) < 1e-15);
    ck_assert(fabs(ac_train_lr(&c, 55) - 0.55) < 1e-15); /* cosine midpoint */
    c.schedule = AC_SCHED_LINEAR;
    ck_assert(fabs(ac_train_lr(&c, 55) - 0.55) < 1e-15);
    ck_assert(fabs(ac_train_lr(&c, 28) - (1.0 - 0.9 * 0.2)) < 1e-15);
    c.schedule = AC_SCHED_CONSTANT;
    ck_assert(ac_train_lr(&c, 90) == 1.0);
    c.warmup = 0;
    c.schedule = AC_SCHED_COSINE;
    ck_assert(ac_train_lr(&c, 1) < 1.0 && ac_train_lr(&c, 1) > 0.99);
}
END_TEST

START_TEST(test_config_diff)
{
    ac_train_config a, b;
    ac_train_config_default(&a, AC_TASK_TEXT);
    b = a;
    ck_assert(ac_train_config_diff(&a, &b) == NULL);
    b.steps = 7;
    b.eval_every = 3;
    b.eval_batches = 9;
    ck_assert(ac_train_config_diff(&a, &b) == NULL);
    b.lr = 0.5;
    ck_assert_str_eq(ac_train_config_diff(&a, &b), "lr");
    b = a;
    b.model.ln = AC_NN_LN_POST;
    ck_assert_str_eq(ac_train_config_diff(&a, &b), "ln");
    b = a;
    b.seed = 2;
    ck_assert_str_eq(ac_train_config_diff(&a, &b), "seed");
    ac_task_kind t;
    ck_assert(ac_task_parse("listops", &t) == AC_OK && t == AC_TASK_LISTOPS);
    ck_assert(ac_task_parse("lm", &t) == AC_EUSAGE);
    ck_assert_str_eq(ac_task_name(AC_TASK_FIT_P), "fit-p");
}
END_TEST

/* ---------------------------------------------------------------- checkpoints */

static void small_listops(ac_train_config *c)
{
    ac_train_config_default(c, AC_TASK_LISTOPS);
    c->seq = 24;
    c->batch = 4;
    c->model.width = 16;
    c->model.heads = 2;
    c->model.ffn = 32;
    c->steps = 8;
    c->warmup = 2;
    c->eval_batches = 1;
}

static void train_steps(ac_trainer *tr, size_t n, double *losses)
{
    ac_err err;
    for (size_t i = 0; i < n; i++) {
        ac_step_info si;
        ck_assert_msg(ac_trainer_step(tr, &si, &err) == AC_OK, "%s", err.msg);
        if (losses)
            losses[i] = si.loss;
    }
}

START_TEST(test_resume_identical)
{
    ac_train_config c;
    small_listops(&c);
    ac_trainer a, b;
    ac_err err;
    double la[8], lb[8];
    char dir[300];
    make_tmpdir();
    snprintf(dir, sizeof dir, "%s/ck", tmpdir);
    ck_assert(ac_trainer_init(&a, &c, &err) == AC_OK);
    train_steps(&a, 8, la);
    /* interrupted run: 3 steps, checkpoint, a fresh trainer loads it */
    ck_assert(ac_trainer_init(&b, &c, &err) == AC_OK);
    train_steps(&b, 3, lb);
    ck_assert(ac_trainer_save(&b, dir, &err) == AC_OK);
    ac_trainer_free(&b);
    ac_train_config c2;
    size_t step;
    ck_assert(ac_train_config_read(dir, &c2, &step, &err) == AC_OK);
    ck_assert_uint_eq(step, 3);
    ck_assert(ac_train_config_diff(&c2, &a.cfg) == NULL);
    ck_assert(ac_trainer_init(&b, &c2, &err) == AC_OK);
    ck_assert_msg(ac_trainer_load(&b, dir, &err) == AC_OK, "%s", err.msg);
    ck_assert_uint_eq(b.step, 3);
    train_steps(&b, 5, lb + 3);
    ck_assert(memcmp(la, lb, sizeof la) == 0);
    ck_assert(memcmp(a.model.params, b.model.params, a.model.nparams * sizeof(double)) == 0);
    ck_assert(memcmp(a.model.m, b.model.m, a.model.nparams * sizeof(double)) == 0);
    ck_assert(memcmp(a.model.v, b.model.v, a.model.nparams * sizeof(double)) == 0);
    /* saving again replaces the checkpoint atomically; nothing else is left */
    ck_assert(ac_trainer_save(&b, dir, &err) == AC_OK);
    ck_assert(ac_train_config_read(dir, &c2, &step, &err) == AC_OK && step == 8);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) = 1", tmpdir);
    ck_assert_msg(system(cmd) == 0, "stray files next to the checkpoint");
    ac_trainer_free(&a);
    ac_trainer_free(&b);
    rm_rf(tmpdir);
}
END_TEST

/* Copy the checkpoint src to dst (plain files). */
static void copy_dir(const char *src, const char *dst)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", dst, src, dst);
    ck_assert(system(cmd) == 0);
}

START_TEST(test_bad_checkpoints)
{
    ac_train_config c;
    small_listops(&c);
    ac_trainer t;
    ac_err err;
    char good[300], bad[300], p[1400], cmd[1500];
    make_tmpdir();
    snprintf(good, sizeof good, "%s/good", tmpdir);
    snprintf(bad, sizeof bad, "%s/bad", tmpdir);
    ck_assert(ac_trainer_init(&t, &c, &err) == AC_OK);
    train_steps(&t, 2, NULL);
    ck_assert(ac_trainer_save(&t, good, &err) == AC_OK);
    train_steps(&t, 1, NULL);
    double *before = malloc(t.model.nparams * sizeof *before);
    memcpy(before, t.model.params, t.model.nparams * sizeof *before);
    /* each corruption must be refused with AC_EDATA naming the problem, and
     * leave the trainer untouched */
    struct {
        const char *shell, *expect;
    } cases[] = {
        {"truncate -s 100 '%s/layer1.ffn.fc.weight.npy'", "layer1.ffn.fc.weight.npy"},
        {"rm '%s/head.bias.npy'", "head.bias.npy: missing"},
        {"rm '%s/adamw.v.npy'", "adamw.v.npy: missing"},
        {"cp '%s/lnf.weight.npy' '%s/lnf.bias.npy'", "checksum mismatch"},
        {"sed -i 's/\"lr\": 0.001/\"lr\": 0.002/' '%s/config.json'", "(lr differs)"},
        {"sed -i 's/\"version\": 1/\"version\": 2/' '%s/config.json'", "version 2"},
        {"sed -i 's/\"step\": 2,/\"step\": 2/' '%s/config.json'", "line"},
        {"rm '%s/config.json'", "config.json: missing"},
        {"sed -i 's/layer0.ln1.weight\"/layer0.ln9.weight\"/' '%s/config.json'", "ln9"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        copy_dir(good, bad);
        snprintf(p, sizeof p, cases[i].shell, bad, bad);
        snprintf(cmd, sizeof cmd, "%s", p);
        ck_assert(system(cmd) == 0);
        int st = ac_trainer_load(&t, bad, &err);
        ck_assert_msg(st == AC_EDATA, "case %zu (%s): status %d, %s", i, cases[i].shell, st,
                      err.msg);
        ck_assert_msg(strstr(err.msg, cases[i].expect) != NULL, "case %zu: message '%s'", i,
                      err.msg);
        ck_assert(t.step == 3);
        ck_assert(memcmp(before, t.model.params, t.model.nparams * sizeof *before) == 0);
    }
    /* a checkpoint of another model */
    ac_train_config c3 = c;
    c3.model.width = 8;
    c3.model.ffn = 16;
    ac_trainer u;
    ck_assert(ac_trainer_init(&u, &c3, &err) == AC_OK);
    ck_assert_int_eq(ac_trainer_load(&u, good, &err), AC_EDATA);
    ck_assert(strstr(err.msg, "(width differs)") != NULL);
    ck_assert_str_eq(err.fields, "width");
    ac_trainer_free(&u);
    /* the good one still loads */
    ck_assert(ac_trainer_load(&t, good, &err) == AC_OK && t.step == 2);
    /* a directory that is not a checkpoint is never replaced */
    snprintf(p, sizeof p, "%s/mine", tmpdir);
    mkdir(p, 0777);
    snprintf(cmd, sizeof cmd, "echo precious > '%s/mine/notes.txt'", tmpdir);
    ck_assert(system(cmd) == 0);
    ck_assert_int_eq(ac_trainer_save(&t, p, &err), AC_ECANTCREAT);
    snprintf(cmd, sizeof cmd, "grep -q precious '%s/mine/notes.txt'", tmpdir);
    ck_assert(system(cmd) == 0);
    ck_assert_int_eq(ac_trainer_load(&t, p, &err), AC_EDATA);
    snprintf(p, sizeof p, "%s/none", tmpdir);
    ck_assert_int_eq(ac_trainer_load(&t, p, &err), AC_ENOINPUT);
    free(before);
    ac_trainer_free(&t);
    rm_rf(tmpdir);
}
END_TEST

START_TEST(test_text_and_fitp)
{
    ac_train_config c;
    ac_trainer t;
    ac_err err;
    char path[300];
    make_tmpdir();
    snprintf(path, sizeof path, "%s/text.txt", tmpdir);
    FILE *f = fopen(path, "w");
    ck_assert(f != NULL);
    for (int i = 0; i < 300; i++)
        fprintf(f, "abcab ca%c\n", 'a' + i % 3);
    fclose(f);
    ac_train_config_default(&c, AC_TASK_TEXT);
    snprintf(c.text_path, sizeof c.text_path, "%s", path);
    c.seq = 16;
    c.batch = 4;
    c.model.width = 16;
    c.model.heads = 2;
    c.model.ffn = 32;
    c.model.layers = 1;
    c.steps = 60;
    c.warmup = 5;
    c.lr = 1e-2;
    ck_assert_msg(ac_trainer_init(&t, &c, &err) == AC_OK, "%s", err.msg);
    ck_assert_uint_eq(t.cfg.model.vocab, 5); /* a b c space newline */
    ac_eval_info e0, e1;
    ck_assert(ac_trainer_eval(&t, &e0, &err) == AC_OK);
    train_steps(&t, 60, NULL);
    ck_assert(ac_trainer_eval(&t, &e1, &err) == AC_OK);
    /* the text is nearly periodic: the model must learn something */
    ck_assert_msg(e1.loss < 0.8 * e0.loss, "eval loss %g -> %g", e0.loss, e1.loss);
    ac_trainer_free(&t);
    /* a file too short for the held-out part */
    c.seq = 400;
    c.model.max_seq = 400;
    ck_assert_int_eq(ac_trainer_init(&t, &c, &err), AC_EDATA);
    ck_assert(strstr(err.msg, "held-out") != NULL);
    ac_trainer_free(&t);
    snprintf(c.text_path, sizeof c.text_path, "%s/missing.txt", tmpdir);
    ck_assert_int_eq(ac_trainer_init(&t, &c, &err), AC_ENOINPUT);
    ac_trainer_free(&t);

    /* fit-p on a representable instance (d = n): the learned head gets P */
    ac_train_config_default(&c, AC_TASK_FIT_P);
    c.fitp_n = 5;
    c.steps = 3000;
    ck_assert(ac_learn_fitp_init(&t, &c, NULL, NULL, &err) == AC_OK);
    ck_assert_uint_eq(t.cfg.seq, 5);
    train_steps(&t, 3000, NULL);
    ck_assert(ac_trainer_eval(&t, &e1, &err) == AC_OK);
    ck_assert_msg(e1.maxdev < 1e-3, "fit-p max dev %g", e1.maxdev);
    ac_mat X = {0}, P = {0}, Wq = {0}, Wk = {0};
    ck_assert(ac_trainer_fitp_instance(&t, &X, &P, &Wq, &Wk, &err) == AC_OK);
    ck_assert(X.rows == 5 && X.cols == 5 && Wq.rows == 5 && Wq.cols == 5);
    ac_mat_free(&X), ac_mat_free(&P), ac_mat_free(&Wq), ac_mat_free(&Wk);
    ac_trainer_free(&t);
    rm_rf(tmpdir);
}
END_TEST

/* ---------------------------------------------------------------- teacher in memory */

START_TEST(test_teacher_in_memory)
{
    /* the same g_V from memory (ac_trainer_init_teacher) and from its files
     * (ac_mh_save_dir, task teacher): the same data, losses, weights and
     * evaluations to the last bit, for a fixed-head and a standard teacher
     * and both kinds of student; the rules of ac_trainer_init_teacher */
    static const size_t shapes[2][3] = {{8, 2, 4}, {6, 3, 2}}; /* d, h, hs */
    ac_err err;
    make_tmpdir();
    for (int k = 0; k < 2; k++)
        for (int fixed = 0; fixed < 2; fixed++) {
            ac_mh V;
            size_t d = shapes[k][0], h = shapes[k][1], hs = shapes[k][2];
            ck_assert(ac_mh_random(&V, d, h, hs, test_seed_value + (uint64_t)k, 9, NULL) == AC_OK);
            ck_assert(ac_mh_save_dir(&V, tmpdir, 'V', &err) == AC_OK);
            ac_train_config c;
            ac_train_config_default(&c, AC_TASK_TEACHER);
            c.seq = 5;
            c.batch = 3;
            c.steps = 6;
            c.warmup = 1;
            c.lr = 1e-2;
            c.seed = test_seed_value;
            c.model.heads = h;
            c.model.kind = fixed ? AC_NN_ATTN_FIXED : AC_NN_ATTN_STANDARD;
            c.model.head_dim = fixed ? 3 : 0;
            ac_trainer a, b;
            ck_assert_msg(ac_trainer_init_teacher(&b, &c, &V, &err) == AC_OK, "%s", err.msg);
            snprintf(c.teacher_dir, sizeof c.teacher_dir, "%s", tmpdir);
            c.teacher_stack = 'V';
            ck_assert_msg(ac_trainer_init(&a, &c, &err) == AC_OK, "%s", err.msg);
            ck_assert(strstr(ac_trainer_data_summary(&b), "teacher in memory: ") != NULL);
            ck_assert(a.model.nparams == b.model.nparams);
            for (int s = 0; s < 6; s++) {
                ac_step_info sa, sb;
                ac_eval_info ea, eb;
                ck_assert(ac_trainer_step(&a, &sa, &err) == AC_OK);
                ck_assert(ac_trainer_step(&b, &sb, &err) == AC_OK);
                ck_assert(ac_trainer_eval(&a, &ea, &err) == AC_OK);
                ck_assert(ac_trainer_eval(&b, &eb, &err) == AC_OK);
                ck_assert_msg(sa.loss == sb.loss && ea.loss == eb.loss &&
                              ea.rel_mse == eb.rel_mse && sa.maxdev == sb.maxdev,
                              "seed %llu, teacher %zu x %zu x %zu, step %d: memory and files "
                              "differ (loss %.17g / %.17g)", (unsigned long long)test_seed_value,
                              d, h, hs, s + 1, sa.loss, sb.loss);
            }
            ck_assert(memcmp(a.model.params, b.model.params,
                             a.model.nparams * sizeof(double)) == 0);
            ac_trainer_free(&a);
            ac_trainer_free(&b);
            /* a directory and a layer at once, another task, no layer */
            ck_assert_int_eq(ac_trainer_init_teacher(&b, &c, &V, &err), AC_EUSAGE);
            ac_trainer_free(&b);
            c.teacher_dir[0] = 0;
            ck_assert_int_eq(ac_trainer_init_teacher(&b, &c, NULL, &err), AC_EUSAGE);
            ac_trainer_free(&b);
            ac_train_config l;
            small_listops(&l);
            ck_assert_int_eq(ac_trainer_init_teacher(&b, &l, &V, &err), AC_EUSAGE);
            ac_trainer_free(&b);
            /* a non-finite parameter, as a file's would be */
            V.wv[1] = INFINITY;
            ck_assert_int_eq(ac_trainer_init_teacher(&b, &c, &V, &err), AC_EDATA);
            ck_assert(strstr(err.msg, "in memory") != NULL);
            ac_trainer_free(&b);
            ac_mh_free(&V);
        }
    rm_rf(tmpdir);
}
END_TEST

START_TEST(test_dump)
{
    ac_train_config c;
    small_listops(&c);
    ac_trainer t;
    ac_err err;
    char dir[300], p[400];
    make_tmpdir();
    snprintf(dir, sizeof dir, "%s/dump", tmpdir);
    ck_assert(ac_trainer_init(&t, &c, &err) == AC_OK);
    double loss;
    ck_assert(ac_trainer_dump_grads(&t, dir, &loss, &err) == AC_OK);
    ac_array a = {0};
    snprintf(p, sizeof p, "%s/loss.npy", dir);
    ck_assert(ac_npy_read(p, &a, &err) == AC_OK && a.ndim == 0 && a.data[0] == loss);
    ac_array_free(&a);
    snprintf(p, sizeof p, "%s/batch.targets.npy", dir);
    ck_assert(ac_npy_read(p, &a, &err) == AC_OK && a.ndim == 1 && a.shape[0] == 4);
    ac_array_free(&a);
    snprintf(p, sizeof p, "%s/grad.layer0.attn.qkv.weight.npy", dir);
    ck_assert(ac_npy_read(p, &a, &err) == AC_OK && a.ndim == 2 && a.shape[0] == 48);
    ac_array_free(&a);
    /* the dump is also a loadable checkpoint */
    ck_assert(ac_trainer_load(&t, dir, &err) == AC_OK);
    ac_trainer_free(&t);
    rm_rf(tmpdir);
}
END_TEST

int main(void)
{
    test_seed_init();
    ac_blas_set_threads(1);
    Suite *s = suite_create("train");
    TCase *tc = tcase_create("train");
    test_no_timeout(tc);
    tcase_add_test(tc, test_listops);
    tcase_add_test(tc, test_schedule);
    tcase_add_test(tc, test_config_diff);
    tcase_add_test(tc, test_resume_identical);
    tcase_add_test(tc, test_bad_checkpoints);
    tcase_add_test(tc, test_text_and_fitp);
    tcase_add_test(tc, test_dump);
    tcase_add_test(tc, test_teacher_in_memory);
    suite_add_tcase(s, tc);
    return test_run_suite(s);
}
