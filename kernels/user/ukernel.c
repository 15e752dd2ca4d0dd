/* A user kernel's life and its bindings. */
#include "ukernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "kernels/kind.h"

/* The kernel around k->def, checked already. */
static void assemble(struct ghd_ukernel *k, json_t *def, const struct ghd_ulimits *lim,
                     const char *tenant, struct ghd_ucompiler *compiler)
{
    atomic_init(&k->refs, 1);
    k->compiler = compiler;
    k->max_elements = lim->max_elements;
    snprintf(k->tenant, sizeof(k->tenant), "%s", tenant ? tenant : "");
    k->definition = json_deep_copy(def);
    const char *desc = json_string_value(json_object_get(def, "description"));
    snprintf(k->describe_doc, sizeof(k->describe_doc), "%s",
             desc ? desc : "A user-defined kernel (see 'definition').");
    pthread_mutex_init(&k->lock, NULL);
    k->base.name = k->def.name;
    k->base.doc = k->describe_doc;
    k->base.result_doc = k->def.kind == GHD_UK_REDUCTION
                             ? "n, value (the output's value) and value_dtype"
                             : "n";
    k->base.kind = &ghd_kernel_kind_user;
}

int ghd_ukernel_new(json_t *def, const struct ghd_ulimits *lim, const char *tenant,
                    struct ghd_ucompiler *compiler, struct ghd_ukernel **out,
                    struct ghd_err *e)
{
    struct ghd_ukernel *k = calloc(1, sizeof(*k));
    if (!k)
        return ghd_err_set(e, GHD_ENOHOSTMEM, "out of host memory");
    int rc = ghd_udef_from_json(def, lim, &k->def, e);
    if (rc) {
        ghd_udef_clear(&k->def);
        free(k);
        return rc;
    }
    assemble(k, def, lim, tenant, compiler);
    *out = k;
    return 0;
}

int ghd_ukernel_new_checked(struct ghd_udef *d, json_t *def, const struct ghd_ulimits *lim,
                            const char *tenant, struct ghd_ucompiler *compiler,
                            struct ghd_ukernel **out)
{
    struct ghd_ukernel *k = calloc(1, sizeof(*k));
    if (!k) {
        ghd_udef_clear(d);
        return GHD_ENOHOSTMEM;
    }
    k->def = *d;
    memset(d, 0, sizeof(*d));
    assemble(k, def, lim, tenant, compiler);
    *out = k;
    return 0;
}

void ghd_ukernel_ref(struct ghd_ukernel *k)
{
    atomic_fetch_add(&k->refs, 1);
}

void ghd_ukernel_unref(struct ghd_ukernel *k)
{
    if (!k || atomic_fetch_sub(&k->refs, 1) != 1)
        return;
    for (int b = 0; b < k->nbindings; b++) {
        ghd_uprog_clear(&k->bindings[b]->prog);
        ghd_ubinding_device_free(k->bindings[b]);
        free(k->bindings[b]);
    }
    pthread_mutex_destroy(&k->lock);
    json_decref(k->definition);
    ghd_udef_clear(&k->def);
    free(k);
}

static int same_binding(const struct ghd_udef *d, const struct ghd_ubind *a,
                        const struct ghd_ubind *b)
{
    if (a->scalar_mask != b->scalar_mask)
        return 0;
    for (const char *ph = d->placeholders; *ph; ph++)
        if (a->ph_type[*ph - 'A'] != b->ph_type[*ph - 'A'])
            return 0;
    return 1;
}

int ghd_ukernel_binding(struct ghd_ukernel *k, const struct ghd_ubind *b,
                        struct ghd_ubinding **out, struct ghd_err *e)
{
    int rc = 0;
    pthread_mutex_lock(&k->lock);
    for (int i = 0; i < k->nbindings; i++)
        if (same_binding(&k->def, &k->bindings[i]->key, b)) {
            *out = k->bindings[i];
            goto out;
        }
    if (k->nbindings == GHD_U_MAX_BINDINGS) {
        rc = ghd_err_set(e, GHD_ELIMIT,
                          "kernel %s already has %d bindings (placeholder types and scalar "
                          "inputs); define another kernel for more",
                          k->def.name, GHD_U_MAX_BINDINGS);
        goto out;
    }
    struct ghd_ubinding *nb = calloc(1, sizeof(*nb));
    if (!nb) {
        rc = ghd_err_set(e, GHD_ENOHOSTMEM, "out of host memory");
        goto out;
    }
    nb->key = *b;
    rc = ghd_ucheck(&k->def, b, &nb->prog, e);
    if (rc) {
        free(nb);
        goto out;
    }
    k->bindings[k->nbindings++] = nb;
    *out = nb;
out:
    pthread_mutex_unlock(&k->lock);
    return rc;
}

#ifndef GHD_HAVE_NVRTC
void ghd_ubinding_device_free(struct ghd_ubinding *b)
{
    (void)b; /* nothing is built without NVRTC */
}
#endif
