/* From a definition's JSON to a checked definition: the structure first
 * (400 for fields that are missing or of the wrong type), then the text
 * fields through the parser (422 at a line and column), then one type check
 * so that a definition that cannot run is refused when it is defined. */
#include "define.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"

static const char *const fields_elementwise[] = {"name", "kind", "description", "in", "out",
                                                 "body", NULL};
static const char *const fields_reduction[] = {"name", "kind", "description", "in", "out",
                                               "map", "reduce", "identity", "post",
                                               "reduce_type", NULL};

int ghd_ukernel_name_valid(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > GHD_U_NAME_MAX)
        return 0;
    for (size_t k = 0; k < len; k++) {
        char c = name[k];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                 (k > 0 && c >= '0' && c <= '9');
        if (!ok)
            return 0;
    }
    return 1;
}

static int get_text(json_t *def, const char *key, int required, const char **out,
                    struct ghd_err *e)
{
    json_t *v = json_object_get(def, key);
    *out = NULL;
    if (!v) {
        if (required)
            return ghd_err_set(e, GHD_EINVAL, "missing field '%s'", key);
        return 0;
    }
    if (!json_is_string(v))
        return ghd_err_set(e, GHD_EINVAL, "'%s' must be a string", key);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return ghd_err_set(e, GHD_EUNPROC, "'%s' contains a NUL character", key);
    *out = json_string_value(v);
    return 0;
}

static int check_fields(json_t *def, const char *const *allowed, const char *kind,
                        struct ghd_err *e)
{
    const char *key;
    json_t *v;
    json_object_foreach(def, key, v) {
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            ok |= strcmp(*a, key) == 0;
        if (!ok)
            return ghd_err_set(e, GHD_EINVAL, "unknown field '%.64s' for %s kernel", key,
                                kind);
    }
    return 0;
}

/* Every output of an elementwise kernel is assigned somewhere. */
static int check_outputs_assigned(const struct ghd_udef *d, struct ghd_err *e)
{
    for (int k = d->nin; k < d->nparams; k++) {
        int assigned = 0;
        for (int s = 0; s < d->nstmts; s++)
            assigned |= d->stmts[s].target == k;
        if (!assigned)
            return ghd_uerr_at(e, GHD_UF_OUT, d->params[k].line, d->params[k].col,
                               "output '%s' is never assigned", d->params[k].name);
    }
    return 0;
}

/* One check with every placeholder bound to `t` and every input a buffer. */
static int check_with(const struct ghd_udef *d, int t, struct ghd_err *e)
{
    struct ghd_ubind b = {.scalar_mask = 0};
    struct ghd_uprog p;
    for (int k = 0; k < 26; k++)
        b.ph_type[k] = t;
    int rc = ghd_ucheck(d, &b, &p, e);
    if (rc == 0)
        ghd_uprog_clear(&p);
    return rc;
}

/* Whether the subtree at `node` reads symbol `sym`. */
static int reads(const struct ghd_udef *d, int node, int sym)
{
    const struct ghd_unode *n = &d->nodes[node];
    if (n->op == GHD_UN_NAME && n->sym == sym)
        return 1;
    for (int k = 0; k < n->nkid; k++)
        if (reads(d, n->kid[k], sym))
            return 1;
    return 0;
}

static int is_name(const struct ghd_udef *d, int node, int sym)
{
    return d->nodes[node].op == GHD_UN_NAME && d->nodes[node].sym == sym;
}

/* The elements are combined in an order the server picks (a tree on the
 * GPU, a loop on the host), so reduce must be associative and commutative.
 * That cannot be decided in general; what is refused here are the forms
 * that never are: one operand dropped, or a and b alone under an operator
 * or function whose result depends on their order or grouping. */
static int check_reduce_order_free(const struct ghd_udef *d, const char *src, struct ghd_err *e)
{
    static const char *const rule = "reduce must be associative and commutative (a + b, "
                                    "a * b, min, max, &, |, ^, &&, ||)";
    const struct ghd_unode *r = &d->nodes[d->reduce];
    if (!reads(d, d->reduce, GHD_USYM_A) || !reads(d, d->reduce, GHD_USYM_B))
        return ghd_uerr_at(e, GHD_UF_REDUCE, r->line, r->col,
                           "'%.40s' does not combine both a and b: %s", src, rule);
    int pair = r->nkid == 2 && ((is_name(d, r->kid[0], GHD_USYM_A) &&
                                 is_name(d, r->kid[1], GHD_USYM_B)) ||
                                (is_name(d, r->kid[0], GHD_USYM_B) &&
                                 is_name(d, r->kid[1], GHD_USYM_A)));
    int order_bound = 0;
    if (pair && r->op == GHD_UN_BINARY) {
        switch (r->sub) {
        case '-': case '/': case '%': case '<': case '>':
        case GHD_UTOK_LE: case GHD_UTOK_GE: case GHD_UTOK_SHL: case GHD_UTOK_SHR:
            order_bound = 1;
            break;
        case GHD_UTOK_EQ: case GHD_UTOK_NE: /* xnor and xor on bools only */
            order_bound = d->acc_ph || d->acc_type != GHD_UT_BOOL;
            break;
        }
    } else if (pair && r->op == GHD_UN_CALL) {
        order_bound = r->sub == GHD_UFN_POW || r->sub == GHD_UFN_ATAN2 ||
                      r->sub == GHD_UFN_FMOD || r->sub == GHD_UFN_COPYSIGN;
    }
    if (order_bound)
        return ghd_uerr_at(e, GHD_UF_REDUCE, r->line, r->col,
                           "'%.40s' depends on the order the elements are combined in: %s",
                           src, rule);
    return 0;
}

static int parse_reduction(json_t *def, struct ghd_udef *d, struct ghd_err *e)
{
    const char *map, *reduce, *identity, *post, *rtype;
    int rc;
    if ((rc = get_text(def, "map", 1, &map, e)) || (rc = get_text(def, "reduce", 1, &reduce, e)) ||
        (rc = get_text(def, "identity", 1, &identity, e)) ||
        (rc = get_text(def, "post", 0, &post, e)) ||
        (rc = get_text(def, "reduce_type", 0, &rtype, e)))
        return rc;
    if (d->nparams - d->nin != 1)
        return ghd_uerr_at(e, GHD_UF_OUT, 1, 1, "a reduction has exactly one output");
    const struct ghd_uparam *out = &d->params[d->nin];
    d->acc_type = out->type;
    d->acc_ph = out->ph;
    if (rtype) {
        size_t len = strlen(rtype);
        if (len == 1 && rtype[0] >= 'A' && rtype[0] <= 'Z') {
            if (!strchr(d->placeholders, rtype[0]))
                return ghd_err_set(e, GHD_EUNPROC,
                                    "reduce_type: placeholder %c is not bound by any parameter",
                                    rtype[0]);
            d->acc_type = GHD_UT_NONE;
            d->acc_ph = rtype[0];
        } else if ((d->acc_type = ghd_utype_parse(rtype, len)) == GHD_UT_NONE) {
            return ghd_err_set(e, GHD_EUNPROC, "reduce_type: '%.32s' is not a type", rtype);
        } else {
            d->acc_ph = 0;
        }
    }
    if ((rc = ghd_uparse_expr(d, GHD_UF_MAP, map, &d->map, e)) ||
        (rc = ghd_uparse_expr(d, GHD_UF_REDUCE, reduce, &d->reduce, e)) ||
        (rc = check_reduce_order_free(d, reduce, e)) ||
        (rc = ghd_uparse_expr(d, GHD_UF_IDENTITY, identity, &d->identity, e)))
        return rc;
    char dflt[48];
    if (!post) { /* the output is the reduced value */
        snprintf(dflt, sizeof(dflt), "%s = a", out->name);
        post = dflt;
    }
    return ghd_uparse_stmts(d, GHD_UF_POST, post, e);
}

int ghd_udef_from_json(json_t *def, const struct ghd_ulimits *lim, struct ghd_udef *d,
                       struct ghd_err *e)
{
    const char *name, *kind, *in, *out, *body, *desc;
    int rc;
    memset(d, 0, sizeof(*d));
    d->max_depth = lim->max_depth;
    if (!json_is_object(def))
        return ghd_err_set(e, GHD_EINVAL, "the definition must be a JSON object");
    if ((rc = get_text(def, "name", 1, &name, e)) || (rc = get_text(def, "kind", 0, &kind, e)) ||
        (rc = get_text(def, "description", 0, &desc, e)))
        return rc;
    if (!ghd_ukernel_name_valid(name))
        return ghd_err_set(e, GHD_EUNPROC,
                            "name '%.64s' is not a kernel name (letters, digits and _, at "
                            "most %d, not starting with a digit)",
                            name, GHD_U_NAME_MAX);
    snprintf(d->name, sizeof(d->name), "%s", name);
    if (!kind || strcmp(kind, "elementwise") == 0) {
        d->kind = GHD_UK_ELEMENTWISE;
    } else if (strcmp(kind, "reduction") == 0) {
        d->kind = GHD_UK_REDUCTION;
    } else {
        return ghd_err_set(e, GHD_EUNPROC, "kind must be 'elementwise' or 'reduction', not '%.32s'",
                            kind);
    }
    rc = check_fields(def, d->kind == GHD_UK_REDUCTION ? fields_reduction : fields_elementwise,
                      d->kind == GHD_UK_REDUCTION ? "a reduction" : "an elementwise", e);
    if (rc)
        return rc;
    /* The size bound covers every text field before any is parsed. */
    size_t total = 0;
    const char *key;
    json_t *v;
    json_object_foreach(def, key, v) {
        if (json_is_string(v))
            total += json_string_length(v);
    }
    if (total > lim->max_definition)
        return ghd_err_set(e, GHD_ETOOBIG,
                            "the definition has %zu bytes of text, more than %zu "
                            "(--kernel-max-definition)",
                            total, lim->max_definition);
    if (desc && strlen(desc) > 1024)
        return ghd_err_set(e, GHD_EUNPROC, "description is longer than 1024 bytes");
    if ((rc = get_text(def, "in", 1, &in, e)) || (rc = get_text(def, "out", 1, &out, e)))
        return rc;
    if ((rc = ghd_uparse_params(d, in, 0, e)) || (rc = ghd_uparse_params(d, out, 1, e)))
        return rc;
    if (d->kind == GHD_UK_REDUCTION) {
        rc = parse_reduction(def, d, e);
    } else {
        if ((rc = get_text(def, "body", 1, &body, e)) ||
            (rc = ghd_uparse_stmts(d, GHD_UF_BODY, body, e)))
            return rc;
        rc = check_outputs_assigned(d, e);
    }
    if (rc)
        return rc;
    if (!d->placeholders[0])
        return check_with(d, GHD_UT_NONE, e);
    struct ghd_err first = {0};
    if ((rc = check_with(d, GHD_UT_F32, &first)) == 0 || check_with(d, GHD_UT_I32, e) == 0)
        return 0;
    snprintf(e->detail, sizeof(e->detail), "with every placeholder f32 (nor with i32): %.270s",
             first.detail);
    return rc;
}
