/* GET /v1/kernels: each kernel's parameters as a list (kind, role, element
 * type, element count, default) and as a JSON Schema for the args object. */
#include "kind.h"

#include <stdio.h>
#include <stddef.h>

#include "registry.h"

static const char *kind_name(enum ghd_param_kind k)
{
    switch (k) {
    case GHD_PK_BUFFER:
        return "buffer";
    case GHD_PK_NUMBER:
        return "number";
    case GHD_PK_COUNT:
        return "integer";
    case GHD_PK_BOOL:
        return "boolean";
    case GHD_PK_DTYPE:
        return "dtype";
    }
    return "unknown";
}

static const char *role_name(enum ghd_param_role r)
{
    switch (r) {
    case GHD_ROLE_IN:
        return "in";
    case GHD_ROLE_OUT:
        return "out";
    case GHD_ROLE_INOUT:
        return "inout";
    case GHD_ROLE_NONE:
        break;
    }
    return "none";
}

static json_t *schema_of(const struct ghd_param *p)
{
    switch (p->kind) {
    case GHD_PK_BUFFER:
        return json_pack("{s:s, s:s}", "type", "string", "description", "a buffer id");
    case GHD_PK_NUMBER:
        return p->has_default ? json_pack("{s:s, s:f}", "type", "number", "default", p->def)
                              : json_pack("{s:s}", "type", "number");
    case GHD_PK_COUNT:
        return p->has_default
                   ? json_pack("{s:s, s:i, s:I}", "type", "integer", "minimum", 0, "default",
                               (json_int_t)p->def)
                   : json_pack("{s:s, s:i}", "type", "integer", "minimum", 0);
    case GHD_PK_BOOL:
        return json_pack("{s:s, s:b}", "type", "boolean", "default", p->def != 0);
    case GHD_PK_DTYPE: {
        json_t *e = json_array();
        for (int t = 0; t < GHD_DTYPE_COUNT; t++)
            if (p->dtypes & GHD_DT(t))
                json_array_append_new(e, json_string(ghd_dtype_name((enum ghd_dtype)t)));
        return json_pack("{s:s, s:o}", "type", "string", "enum", e);
    }
    }
    return json_object();
}

static json_t *describe_param(const struct ghd_kernel *k, const struct ghd_param *p)
{
    json_t *d = json_pack("{s:s, s:s, s:b, s:s}", "name", p->name, "kind", kind_name(p->kind),
                          "required", p->required, "description", p->doc);
    json_t *schema = schema_of(p);
    json_t *def = json_object_get(schema, "default");
    if (def)
        json_object_set(d, "default", def);
    if (p->kind == GHD_PK_DTYPE)
        json_object_set(d, "types", json_object_get(schema, "enum"));
    if (p->kind == GHD_PK_BUFFER) {
        json_object_set_new(d, "role", json_string(role_name(p->role)));
        const struct ghd_param *tp = ghd_kernel_type_param(k, p);
        const char *et = tp ? tp->name : "result type (see description)";
        const char *count = p->count == GHD_COUNT_N     ? "n"
                            : p->count == GHD_COUNT_ONE ? "1"
                                                        : "from the matrix shape and stride";
        json_object_set_new(d, "element_type", json_string(et));
        json_object_set_new(d, "elements", json_string(count));
        json_object_set_new(d, "offset_param", json_sprintf("%s_offset", p->name));
        json_t *in_place = json_array();
        for (size_t j = 0; j < k->nparams; j++)
            if (k->params[j].kind == GHD_PK_BUFFER && (p->alias_ok & GHD_SLOT(k->params[j].slot)))
                json_array_append_new(in_place, json_string(k->params[j].name));
        json_object_set_new(d, "may_alias", in_place);
    }
    json_object_set_new(d, "schema", schema);
    return d;
}

static json_t *describe_offset(const struct ghd_param *p)
{
    json_t *d = json_object();
    json_object_set_new(d, "name", json_sprintf("%s_offset", p->name));
    json_object_set_new(d, "kind", json_string("integer"));
    json_object_set_new(d, "required", json_false());
    json_object_set_new(d, "default", json_integer(0));
    json_object_set_new(d, "description",
                        json_sprintf("Index of the first element of %s used, in elements.",
                                     p->name));
    json_object_set_new(d, "schema", json_pack("{s:s, s:i, s:i}", "type", "integer",
                                               "minimum", 0, "default", 0));
    return d;
}

json_t *ghd_kernel_builtin_describe_new(const struct ghd_kernel *k)
{
    json_t *params = json_array(), *props = json_object(), *required = json_array();
    json_t *backends = json_array();
    for (int b = 0; b < GHD_BACKEND_COUNT; b++)
        if (k->impl[b])
            json_array_append_new(backends, json_string(ghd_backend_name((enum ghd_backend_kind)b)));
    for (size_t i = 0; i < k->nparams; i++) {
        const struct ghd_param *p = &k->params[i];
        json_t *d = describe_param(k, p);
        json_t *prop = json_deep_copy(json_object_get(d, "schema"));
        json_object_set_new(prop, "description", json_string(p->doc));
        json_object_set_new(props, p->name, prop);
        if (p->required)
            json_array_append_new(required, json_string(p->name));
        json_array_append_new(params, d);
        if (p->kind == GHD_PK_BUFFER) {
            json_t *o = describe_offset(p);
            json_object_set_new(props, json_string_value(json_object_get(o, "name")),
                                json_deep_copy(json_object_get(o, "schema")));
            json_array_append_new(params, o);
        }
    }
    json_t *schema = json_pack("{s:s, s:o, s:o, s:b}", "type", "object", "properties", props,
                               "required", required, "additionalProperties", 0);
    /* A built-in runs to its end once started (kernel.h, ghd_kernel_call_stoppable). */
    return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:b}", "name", k->name, "description",
                     k->doc, "result", k->result_doc, "backends", backends, "params", params,
                     "args_schema", schema, "stoppable", 0);
}
