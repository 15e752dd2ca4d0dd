#ifndef GHD_KERNELS_USER_ULANG_H
#define GHD_KERNELS_USER_ULANG_H

/* The user kernel language: element types, the syntax tree a definition
 * parses into, and the error value every stage fills. Plain C, no jansson:
 * the definition's JSON is read by define.c.
 *
 * A definition is parsed once (parse.c) into struct ghd_udef. It is type
 * checked once per binding (check.c): the types bound to its one-letter
 * placeholders and which inputs are scalars; the checked copy of the tree
 * (struct ghd_uprog) is what the interpreter (interp.c) and the CUDA code
 * generator (codegen.c) walk, so both see the same types and the same
 * implicit conversions. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

enum ghd_utype {
    GHD_UT_BOOL,
    GHD_UT_I8, GHD_UT_I16, GHD_UT_I32, GHD_UT_I64,
    GHD_UT_U8, GHD_UT_U16, GHD_UT_U32, GHD_UT_U64,
    GHD_UT_F16, GHD_UT_BF16, GHD_UT_F32, GHD_UT_F64,
    GHD_UT_COUNT,
    /* Untyped literals while checking: they take the type of the other
     * operand (Go's constants), else i32/i64 and f64. */
    GHD_UT_INTLIT = GHD_UT_COUNT,
    GHD_UT_FLTLIT,
    GHD_UT_NONE = -1,
};

const char *ghd_utype_name(int t);
/* The type named `s` (length len), or GHD_UT_NONE. */
int ghd_utype_parse(const char *s, size_t len);
size_t ghd_utype_size(int t);
int ghd_utype_is_float(int t);
int ghd_utype_is_int(int t); /* the eight integer types (not bool) */
int ghd_utype_is_signed(int t);
int ghd_utype_bits(int t);

/* Errors are the service's one error value (base/err.h); for definition
 * errors GHD_EUNPROC with the field, line and column of the offending token
 * in the detail. */
/* GHD_EUNPROC with "<field>, line L, column C: <message>" (the line only
 * when it is not the first). */
int ghd_uerr_at(struct ghd_err *e, int field, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* ---- limits ---------------------------------------------------------- */

#define GHD_U_NAME_MAX 63
#define GHD_U_MAX_PARAMS 16
#define GHD_U_MAX_STMTS 64
#define GHD_U_MAX_LOCALS 32
#define GHD_U_MAX_NODES 4096
#define GHD_U_MAX_CALL_ARGS 3

/* ---- syntax tree ----------------------------------------------------- */

enum ghd_unode_op {
    GHD_UN_INT,    /* integer literal: ival */
    GHD_UN_FLOAT,  /* float literal: fval */
    GHD_UN_BOOL,   /* true/false: ival */
    GHD_UN_NAME,   /* a symbol: sym */
    GHD_UN_INDEX,  /* sym[kid0]: a raw buffer read */
    GHD_UN_LEN,    /* len(sym): a raw buffer's element count */
    GHD_UN_CALL,   /* function sub (enum ghd_ufn) of nkid arguments */
    GHD_UN_CAST,   /* type sub (or placeholder ph) of kid0 */
    GHD_UN_UNARY,  /* operator sub (a token) of kid0 */
    GHD_UN_BINARY, /* kid0 sub kid1 */
    GHD_UN_COND,   /* kid0 ? kid1 : kid2 */
};

/* Symbols a NAME refers to. */
enum {
    GHD_USYM_I = 100, /* the element index (i64) */
    GHD_USYM_N,       /* the element count (i64) */
    GHD_USYM_A,       /* reductions: the left operand / the reduced value */
    GHD_USYM_B,       /* reductions: the right operand */
    GHD_USYM_LOCAL0 = 200, /* + local index */
    /* 0 .. GHD_U_MAX_PARAMS-1: parameters */
};

struct ghd_unode {
    int op;
    int sub;      /* operator token, function, or cast type */
    char ph;      /* cast to a placeholder type: its letter */
    int sym;
    int type;     /* checked type (ghd_uprog's copy); GHD_UT_NONE in the definition */
    int line, col;
    int depth;    /* of the subtree: a leaf is 1 */
    int field;    /* enum ghd_ufield it was parsed from */
    uint64_t ival;
    double fval;
    int kid[GHD_U_MAX_CALL_ARGS];
    int nkid;
};

/* Tokens that name operators (ASCII for single characters). */
enum {
    GHD_UTOK_EOF = 0,
    GHD_UTOK_NAME = 256, GHD_UTOK_INT, GHD_UTOK_FLOAT,
    GHD_UTOK_LE, GHD_UTOK_GE, GHD_UTOK_EQ, GHD_UTOK_NE, GHD_UTOK_AND, GHD_UTOK_OR,
    GHD_UTOK_SHL, GHD_UTOK_SHR, GHD_UTOK_SEP, /* ';' or a line break */
};

enum ghd_ufn {
    GHD_UFN_SQRT, GHD_UFN_RSQRT, GHD_UFN_CBRT, GHD_UFN_EXP, GHD_UFN_EXP2, GHD_UFN_EXPM1,
    GHD_UFN_LOG, GHD_UFN_LOG2, GHD_UFN_LOG10, GHD_UFN_LOG1P,
    GHD_UFN_SIN, GHD_UFN_COS, GHD_UFN_TAN, GHD_UFN_ASIN, GHD_UFN_ACOS, GHD_UFN_ATAN,
    GHD_UFN_SINH, GHD_UFN_COSH, GHD_UFN_TANH, GHD_UFN_ERF, GHD_UFN_ERFC,
    GHD_UFN_FLOOR, GHD_UFN_CEIL, GHD_UFN_ROUND, GHD_UFN_TRUNC,
    GHD_UFN_POW, GHD_UFN_ATAN2, GHD_UFN_HYPOT, GHD_UFN_FMOD, GHD_UFN_COPYSIGN,
    GHD_UFN_FMA,
    GHD_UFN_ABS, GHD_UFN_MIN, GHD_UFN_MAX,
    GHD_UFN_ISNAN, GHD_UFN_ISINF, GHD_UFN_ISFINITE,
    GHD_UFN_COUNT
};

/* Function table: name, arity, and its family. */
enum ghd_ufn_family {
    GHD_UFF_MATH,  /* float math: integers convert to f64, halves compute in f32 */
    GHD_UFF_ANY,   /* abs/min/max: any number, the common type */
    GHD_UFF_CLASS, /* isnan/isinf/isfinite: a float, bool result */
};

struct ghd_ufn_info {
    const char *name;
    int arity;
    int family;
};

extern const struct ghd_ufn_info ghd_ufn_table[GHD_UFN_COUNT];
/* Function named s[0..len), or -1. */
int ghd_ufn_find(const char *s, size_t len);

/* ---- a definition ---------------------------------------------------- */

enum ghd_ukind { GHD_UK_ELEMENTWISE, GHD_UK_REDUCTION };

struct ghd_uparam {
    char name[32];
    int type;  /* enum ghd_utype, or GHD_UT_NONE for a placeholder */
    char ph;   /* 'A'..'Z' for a placeholder, else 0 */
    int is_out;
    int is_raw;
    /* raw inputs: what an out-of-range read yields (a literal) */
    int def_is_float;
    double def_f;
    uint64_t def_i;
    int line, col;
};

struct ghd_ustmt {
    int target;    /* a symbol: an out parameter or a local */
    int decl_type; /* "T name = ..." declares with a type, else GHD_UT_NONE */
    char decl_ph;
    int expr;      /* node index */
    int line, col;
};

/* The fields of a definition that hold language text. */
enum ghd_ufield { GHD_UF_IN, GHD_UF_OUT, GHD_UF_BODY, GHD_UF_MAP, GHD_UF_REDUCE,
                  GHD_UF_IDENTITY, GHD_UF_POST, GHD_UF_COUNT };
extern const char *const ghd_ufield_name[GHD_UF_COUNT];

struct ghd_udef {
    char name[GHD_U_NAME_MAX + 1];
    int kind; /* enum ghd_ukind */
    struct ghd_uparam params[GHD_U_MAX_PARAMS];
    int nparams, nin; /* inputs first, then outputs */
    struct ghd_unode *nodes;
    int nnodes, cap;
    /* elementwise: the body; reductions: post */
    struct ghd_ustmt stmts[GHD_U_MAX_STMTS];
    int nstmts;
    char locals[GHD_U_MAX_LOCALS][32];
    int nlocals;
    /* reductions */
    int map, reduce, identity; /* node indices */
    int acc_type;              /* the type of a, b and the reduced value */
    char acc_ph;
    char placeholders[27];     /* the letters used, in order of first use */
    unsigned max_depth;        /* limit on expression nesting */
};

/* Parses a parameter list ("f32 x, raw T w = 0") into d->params;
 * `is_out` for the "out" field. */
int ghd_uparse_params(struct ghd_udef *d, const char *src, int is_out, struct ghd_err *e);
/* Parses statements (field body or post) into d->stmts. */
int ghd_uparse_stmts(struct ghd_udef *d, int field, const char *src, struct ghd_err *e);
/* Parses one expression (map, reduce, identity); its root in *root. */
int ghd_uparse_expr(struct ghd_udef *d, int field, const char *src, int *root,
                    struct ghd_err *e);
/* Frees the node array. */
void ghd_udef_clear(struct ghd_udef *d);
/* The parameter named s[0..len), or -1. */
int ghd_udef_param(const struct ghd_udef *d, const char *s, size_t len);

/* ---- a binding and its checked program -------------------------------- */

struct ghd_ubind {
    int ph_type[26];      /* bound type per placeholder letter, GHD_UT_NONE if unused */
    uint32_t scalar_mask; /* bit p: input p is given as a scalar */
};

struct ghd_uprog {
    const struct ghd_udef *def;
    struct ghd_ubind bind;
    struct ghd_unode *nodes; /* the checked copy, with implicit casts */
    int nnodes, cap;
    int param_type[GHD_U_MAX_PARAMS];
    int local_type[GHD_U_MAX_LOCALS];
    int acc_type;
    /* the roots after checking (casts may have been added above them) */
    int stmt_expr[GHD_U_MAX_STMTS];
    int map, reduce, identity;
};

/* A value of the language: ints sign- or zero-extended to 64 bits in u,
 * bool 0/1 in u, f32/f16/bf16 in f (halves already rounded), f64 in d. */
union ghd_uval {
    uint64_t u;
    int64_t i;
    float f;
    double d;
};

/* One parameter's argument for an execution. */
struct ghd_uarg {
    void *ptr;        /* a buffer: element 0 (its offset applied); NULL for a scalar */
    uint64_t len;     /* raw inputs: the elements readable from ptr */
    union ghd_uval v; /* a scalar's value */
};

/* Converts v of type `from` to type `to` (the CAST rules of uops.h). */
union ghd_uval ghd_uval_convert(union ghd_uval v, int from, int to);
/* Loads / stores one element of type t (the buffer's representation: f16
 * and bf16 as their 16-bit patterns, bool as one byte 0/1). */
union ghd_uval ghd_uval_load(const void *p, int t);
void ghd_uval_store(void *p, int t, union ghd_uval v);

/* The host interpreter, the reference the GPU is checked against: runs a
 * checked program over n elements with arguments indexed like d->params.
 * For reductions *acc receives the reduced value (type p->acc_type) after
 * post has run, and the output buffer (when given) its element. It looks
 * at *stop (when not NULL) every few thousand elements: once it is nonzero
 * the run ends with GHD_ECANCELED, its outputs partly written. */
int ghd_uinterp_run(const struct ghd_uprog *p, const struct ghd_uarg *args, uint64_t n,
                    const atomic_int *stop, union ghd_uval *acc, struct ghd_err *e);

/* Type checks `d` under `b` into *p (owning its node array). */
int ghd_ucheck(const struct ghd_udef *d, const struct ghd_ubind *b, struct ghd_uprog *p,
               struct ghd_err *e);
void ghd_uprog_clear(struct ghd_uprog *p);

#endif
