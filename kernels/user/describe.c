/* A user kernel described as built-ins describe themselves (describe.c one
 * level up): its parameters as a list and as a JSON Schema of the args
 * object, plus the definition it came from. */
#include "ukernel.h"

#include <stdio.h>

static json_t *param_new(const char *name, const char *kind, int required, json_t *schema,
                         const char *doc)
{
    json_t *d = json_pack("{s:s, s:s, s:b, s:s}", "name", name, "kind", kind, "required",
                          required, "description", doc);
    json_object_set_new(d, "schema", schema);
    return d;
}

static void add(json_t *params, json_t *props, json_t *required, json_t *d)
{
    const char *name = json_string_value(json_object_get(d, "name"));
    json_t *prop = json_deep_copy(json_object_get(d, "schema"));
    json_object_set(prop, "description", json_object_get(d, "description"));
    json_object_set_new(props, name, prop);
    if (json_is_true(json_object_get(d, "required")))
        json_array_append_new(required, json_string(name));
    json_array_append_new(params, d);
}

static json_t *type_enum_new(void)
{
    json_t *e = json_array();
    for (int t = 0; t < GHD_UT_COUNT; t++)
        json_array_append_new(e, json_string(ghd_utype_name(t)));
    return e;
}

json_t *ghd_ukernel_describe_new(const struct ghd_ukernel *k)
{
    const struct ghd_udef *d = &k->def;
    json_t *params = json_array(), *props = json_object(), *required = json_array();
    char doc[160], type[8];
    for (const char *ph = d->placeholders; *ph; ph++) {
        char name[2] = {*ph, 0};
        snprintf(doc, sizeof(doc), "The type bound to placeholder %c.", *ph);
        json_t *p = param_new(name, "dtype", 1, json_pack("{s:s, s:o}", "type", "string",
                                                           "enum", type_enum_new()), doc);
        json_object_set_new(p, "types", json_deep_copy(json_object_get(json_object_get(p, "schema"), "enum")));
        add(params, props, required, p);
    }
    for (int i = 0; i < d->nparams; i++) {
        const struct ghd_uparam *q = &d->params[i];
        int scalar_ok = !q->is_out && !q->is_raw;
        int optional = q->is_out && d->kind == GHD_UK_REDUCTION;
        snprintf(type, sizeof(type), "%s", q->ph ? (char[2]){q->ph, 0} : ghd_utype_name(q->type));
        snprintf(doc, sizeof(doc), "%s%s %s: %s.", q->is_raw ? "raw " : "", type, q->name,
                 q->is_out ? (optional ? "the output, one element (optional: the run's result "
                                         "has the value)"
                                       : "an output buffer of n elements")
                 : q->is_raw ? "a buffer read at any index (out of range reads the default)"
                 : "a buffer of n elements, or a number used for every element");
        json_t *schema = scalar_ok
                             ? json_pack("{s:[s,s,s]}", "type", "string", "number", "boolean")
                             : json_pack("{s:s, s:s}", "type", "string", "description",
                                         "a buffer id");
        json_t *p = param_new(q->name, scalar_ok ? "buffer or number" : "buffer", !optional,
                              schema, doc);
        json_object_set_new(p, "role", json_string(q->is_out ? "out" : "in"));
        json_object_set_new(p, "element_type", json_string(type));
        json_object_set_new(p, "elements",
                            json_string(q->is_raw ? "any" : optional ? "1" : "n"));
        json_object_set_new(p, "offset_param", json_sprintf("%s_offset", q->name));
        json_object_set_new(p, "raw", json_boolean(q->is_raw));
        if (q->is_raw)
            json_object_set_new(p, "default", q->def_is_float ? json_real(q->def_f)
                                                              : json_integer((json_int_t)q->def_i));
        add(params, props, required, p);
        char off[48], odoc[96];
        snprintf(off, sizeof(off), "%s_offset", q->name);
        snprintf(odoc, sizeof(odoc), "Index of the first element of %s used, in elements.",
                 q->name);
        json_t *o = param_new(off, "integer", 0,
                              json_pack("{s:s, s:i, s:i}", "type", "integer", "minimum", 0,
                                        "default", 0),
                              odoc);
        json_object_set_new(o, "default", json_integer(0));
        add(params, props, required, o);
    }
    add(params, props, required,
        param_new("n", "integer", 1, json_pack("{s:s, s:i}", "type", "integer", "minimum", 0),
                  "Number of elements (i runs from 0 to n-1)."));
    json_t *backends = json_array();
    json_array_append_new(backends, json_string("host"));
#ifdef GHD_HAVE_CUDA
    json_array_append_new(backends, json_string("cuda"));
#endif
    json_t *schema = json_pack("{s:s, s:o, s:o, s:b}", "type", "object", "properties", props,
                               "required", required, "additionalProperties", 0);
    return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:b, s:s, s:O, s:b}", "name", d->name,
                     "description", k->describe_doc, "result", k->base.result_doc, "backends",
                     backends, "params", params, "args_schema", schema, "user", 1, "kind",
                     d->kind == GHD_UK_REDUCTION ? "reduction" : "elementwise", "definition",
                     k->definition, "stoppable", 1);
}
