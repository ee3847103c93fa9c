/* The record walk of kafkalite.validation.pywalk, compiled: same arguments, same results, same messages.
 * See pywalk.py for the semantics (it is the reference; tests run both over the same corpus).
 *
 * walk_core() touches no Python object (its error is a code and two numbers, turned into Kafka's message
 * afterwards), so Walker.feed can run it with the GIL released: a worker thread validating a large compressed
 * batch does not hold up the event loop's thread. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

enum { OK = 0, NEED = 1, BAD = 2, SHORT = 3 };

/* errors: each is one of the InvalidRecordException texts of pywalk.py */
enum {
    E_NONE = 0,
    E_PREMATURE,    /* Incorrect declared batch size, premature EOF reached */
    E_TOO_LONG,     /* Found invalid record structure: varint too long */
    E_NEGLEN,       /* Invalid record size: negative length A */
    E_TRUNC,        /* Invalid record size: expected A bytes in record payload, but ... only B remaining bytes. */
    E_STRUCT,       /* Found invalid record structure */
    E_OFFSET,       /* Inner record offset delta A of the record at index I ... */
    E_NH_NEG,       /* Found invalid number of record headers A */
    E_NH_BIG,       /* Found invalid number of record headers. A is larger than the remaining size ... */
    E_HK_NEG,       /* Invalid negative header key size A */
    E_SIZE,         /* Invalid record size: expected to read A bytes in record payload, but instead read B */
    E_REMAINING,    /* Incorrect declared batch size, records still remaining in file */
};

typedef struct {
    Py_ssize_t index, count, bad_index, nokey;
    int64_t base_ts, lo, hi, max_ts, bad_ts;
} WState;

typedef struct {
    int code;
    int64_t a, b;
} WError;

static PyObject *error_message(const WError *e, Py_ssize_t index) {
    switch (e->code) {
    case E_PREMATURE: return PyUnicode_FromString("Incorrect declared batch size, premature EOF reached");
    case E_TOO_LONG: return PyUnicode_FromString("Found invalid record structure: varint too long");
    case E_NEGLEN: return PyUnicode_FromFormat("Invalid record size: negative length %lld", (long long)e->a);
    case E_TRUNC:
        return PyUnicode_FromFormat("Invalid record size: expected %lld bytes in record payload, but instead the "
                                    "buffer has only %lld remaining bytes.", (long long)e->a, (long long)e->b);
    case E_STRUCT: return PyUnicode_FromString("Found invalid record structure");
    case E_OFFSET:
        return PyUnicode_FromFormat("Inner record offset delta %lld of the record at index %zd does not match its "
                                    "position (expected %zd)", (long long)e->a, index, index);
    case E_NH_NEG: return PyUnicode_FromFormat("Found invalid number of record headers %lld", (long long)e->a);
    case E_NH_BIG:
        return PyUnicode_FromFormat("Found invalid number of record headers. %lld is larger than the remaining "
                                    "size of the buffer", (long long)e->a);
    case E_HK_NEG: return PyUnicode_FromFormat("Invalid negative header key size %lld", (long long)e->a);
    case E_SIZE:
        return PyUnicode_FromFormat("Invalid record size: expected to read %lld bytes in record payload, but "
                                    "instead read %lld", (long long)e->a, (long long)e->b);
    case E_REMAINING:
        return PyUnicode_FromString("Incorrect declared batch size, records still remaining in file");
    default: Py_RETURN_NONE;
    }
}

/* zig-zag varint of at most max_bytes bytes, masked to `bits` bits before the zig-zag step */
static inline int rd_varint(const unsigned char *b, Py_ssize_t *p, Py_ssize_t end, int max_bytes, int bits,
                            int64_t *out) {
    uint64_t raw = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (*p >= end) return SHORT;
        unsigned char c = b[(*p)++];
        if (shift < 64) raw |= ((uint64_t)(c & 0x7F)) << shift;
        if (!(c & 0x80)) {
            if (bits == 32) {
                uint32_t r = (uint32_t)raw;
                *out = (int64_t)(int32_t)((r >> 1) ^ (uint32_t)(-(int32_t)(r & 1)));
            } else {
                *out = (int64_t)((raw >> 1) ^ (uint64_t)(-(int64_t)(raw & 1)));
            }
            return OK;
        }
        shift += 7;
    }
    return BAD;
}

/* one-byte varints (most record fields) without the loop; anything else through rd_varint */
#define VARINT(dst, max_bytes, bits)                                                   \
    do {                                                                               \
        if (p < end && !(b[p] & 0x80)) {                                               \
            uint32_t r_ = b[p++];                                                      \
            dst = (int64_t)(int32_t)((r_ >> 1) ^ (uint32_t)(-(int32_t)(r_ & 1)));      \
        } else if (p + 1 < end && !(b[p + 1] & 0x80)) {                                \
            uint32_t r_ = (uint32_t)(b[p] & 0x7F) | ((uint32_t)b[p + 1] << 7);         \
            p += 2;                                                                    \
            dst = (int64_t)(int32_t)((r_ >> 1) ^ (uint32_t)(-(int32_t)(r_ & 1)));      \
        } else {                                                                       \
            rc = rd_varint(b, &p, end, max_bytes, bits, &dst);                         \
            if (rc != OK) goto structural;                                             \
        }                                                                              \
    } while (0)

static inline void account(WState *s, int64_t delta) {
    int64_t ts = (int64_t)((uint64_t)s->base_ts + (uint64_t)delta);
    if (ts > s->max_ts) s->max_ts = ts;
    if (s->bad_index < 0 && ts != -1 && (ts < s->lo || ts > s->hi)) {
        s->bad_index = s->index;
        s->bad_ts = ts;
    }
}

/* Walk whole records of b[*pos..n) (see pywalk.walk); *pos ends at the first record not walked. The state is
 * kept in locals while walking (a store through `s` could alias the bytes read: the compiler would reload). */
static int walk_core(const unsigned char *b, Py_ssize_t n, Py_ssize_t *pos_io, int final, WState *s, WError *err) {
    Py_ssize_t pos = *pos_io < 0 ? 0 : *pos_io;
    Py_ssize_t index = s->index, count = s->count, bad_index = s->bad_index, nokey = s->nokey;
    int64_t base_ts = s->base_ts, lo = s->lo, hi = s->hi, max_ts = s->max_ts, bad_ts = s->bad_ts;
    int code = E_NONE;
    int64_t ea = 0, eb = 0;
    while (index < count) {
        if (pos >= n) {
            if (final) code = E_PREMATURE;
            break;
        }
        Py_ssize_t p = pos;
        int64_t length;
        int rc = OK;
        if (p + 1 < n && (b[p] & 0x80) && !(b[p + 1] & 0x80)) {   /* records of 64..8191 bytes */
            uint32_t r_ = (uint32_t)(b[p] & 0x7F) | ((uint32_t)b[p + 1] << 7);
            p += 2;
            length = (int64_t)(int32_t)((r_ >> 1) ^ (uint32_t)(-(int32_t)(r_ & 1)));
        } else {
            rc = rd_varint(b, &p, n, 5, 32, &length);
        }
        if (rc == SHORT) {
            if (final) code = E_PREMATURE;
            break;
        }
        if (rc == BAD) { code = E_TOO_LONG; break; }
        if (length < 0) { code = E_NEGLEN; ea = length; break; }
        Py_ssize_t end = p + (Py_ssize_t)length;
        if (end > n) {
            if (final) { code = E_TRUNC; ea = length; eb = n - p; }
            break;
        }
        Py_ssize_t start = p;
        int64_t delta, off, klen, vlen, nh, hk, hv;
        if (p >= end) { code = E_STRUCT; break; }
        p++; /* attributes */
        VARINT(delta, 10, 64);
        VARINT(off, 5, 32);
        if (off != (int64_t)index) { code = E_OFFSET; ea = off; break; }
        VARINT(klen, 5, 32);
        if (klen >= 0) {
            if (klen > end - p) { code = E_STRUCT; break; }
            p += klen;
        } else if (nokey < 0) {
            nokey = index;
        }
        VARINT(vlen, 5, 32);
        if (vlen >= 0) {
            if (vlen > end - p) { code = E_STRUCT; break; }
            p += vlen;
        }
        VARINT(nh, 5, 32);
        if (nh < 0) { code = E_NH_NEG; ea = nh; break; }
        if (nh > end - p) { code = E_NH_BIG; ea = nh; break; }
        for (int64_t h = 0; h < nh; h++) {
            VARINT(hk, 5, 32);
            if (hk < 0) { code = E_HK_NEG; ea = hk; goto out; }
            if (hk > end - p) { code = E_STRUCT; goto out; }
            p += hk;
            VARINT(hv, 5, 32);
            if (hv >= 0) {
                if (hv > end - p) { code = E_STRUCT; goto out; }
                p += hv;
            }
        }
        if (p != end) { code = E_SIZE; ea = length; eb = p - start; break; }
        {
            int64_t ts = (int64_t)((uint64_t)base_ts + (uint64_t)delta);
            if (ts > max_ts) max_ts = ts;
            if (bad_index < 0 && ts != -1 && (ts < lo || ts > hi)) {
                bad_index = index;
                bad_ts = ts;
            }
        }
        index++;
        pos = end;
        continue;
    structural:
        code = rc == BAD ? E_TOO_LONG : E_STRUCT;
        break;
    }
out:
    if (code == E_NONE && index >= count && pos < n) code = E_REMAINING;
    s->index = index; s->bad_index = bad_index; s->nokey = nokey; s->max_ts = max_ts; s->bad_ts = bad_ts;
    err->code = code; err->a = ea; err->b = eb;
    *pos_io = pos;
    return code;
}

static PyObject *walk(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos;
    int final;
    long long base_ts_, lo_, hi_, max_ts_, bad_ts_;
    WState s;
    WError err;
    if (!PyArg_ParseTuple(args, "y*npnnLLLLnLn", &view, &pos, &final, &s.index, &s.count, &base_ts_, &lo_, &hi_,
                          &max_ts_, &s.bad_index, &bad_ts_, &s.nokey))
        return NULL;
    s.base_ts = base_ts_; s.lo = lo_; s.hi = hi_; s.max_ts = max_ts_; s.bad_ts = bad_ts_;
    walk_core((const unsigned char *)view.buf, view.len, &pos, final, &s, &err);
    PyBuffer_Release(&view);
    PyObject *msg = error_message(&err, s.index);
    if (msg == NULL) return NULL;
    PyObject *r = Py_BuildValue("(OnnLnLn)", msg, pos, s.index, (long long)s.max_ts, s.bad_index,
                                (long long)s.bad_ts, s.nokey);
    Py_DECREF(msg);
    return r;
}

/* ---- Walker: the streaming walk (pywalk.Walker, line for line) ---------------------------------------- */

enum { P_LEN, P_ATTR, P_DELTA, P_OFF, P_KLEN, P_VLEN, P_NH, P_HK, P_HV, P_SKIP, P_END, P_DRAIN };

typedef struct {
    PyObject_HEAD
    WState s;
    WError err;      /* the verdict once known (code != E_NONE) */
    WError pend;     /* the current record's error, reported at its end */
    int phase, next;
    uint64_t vraw;
    int vn;
    int64_t length, rem, delta, hleft, skip;
} Walker;

/* a varint that may have started in an earlier piece; bounded: inside the record (counts against rem) */
static inline int wvarint(Walker *w, const unsigned char *b, Py_ssize_t *pos, Py_ssize_t n, int max_bytes, int bits,
                          int bounded, int64_t *out) {
    uint64_t raw = w->vraw;
    int k = w->vn;
    for (;;) {
        if (bounded && w->rem == 0) { w->vraw = 0; w->vn = 0; return SHORT; }
        if (*pos >= n) { w->vraw = raw; w->vn = k; return NEED; }
        unsigned char c = b[(*pos)++];
        if (bounded) w->rem--;
        if (7 * k < 64) raw |= ((uint64_t)(c & 0x7F)) << (7 * k);
        k++;
        if (!(c & 0x80)) {
            w->vraw = 0; w->vn = 0;
            if (bits == 32) {
                uint32_t r = (uint32_t)raw;
                *out = (int64_t)(int32_t)((r >> 1) ^ (uint32_t)(-(int32_t)(r & 1)));
            } else {
                *out = (int64_t)((raw >> 1) ^ (uint64_t)(-(int64_t)(raw & 1)));
            }
            return OK;
        }
        if (k == max_bytes) { w->vraw = 0; w->vn = 0; return BAD; }
    }
}

static inline void wfail(Walker *w, int code, int64_t a, int64_t b) {
    w->pend.code = code; w->pend.a = a; w->pend.b = b;
    w->phase = P_DRAIN;
    if (w->rem == 0) w->err = w->pend;
}

static inline void wskip(Walker *w, int64_t n, int then) {
    if (n > 0) { w->skip = n; w->next = then; w->phase = P_SKIP; }
    else w->phase = then;
}

/* advance through the current record; returns where the piece was left */
static Py_ssize_t wrecord(Walker *w, const unsigned char *b, Py_ssize_t pos, Py_ssize_t n) {
    for (;;) {
        int ph = w->phase;
        int64_t v;
        int st;
        if (ph == P_SKIP) {
            int64_t take = w->skip < n - pos ? w->skip : n - pos;
            pos += take; w->rem -= take; w->skip -= take;
            if (w->skip) return pos;
            w->phase = w->next;
            continue;
        }
        if (ph == P_DRAIN) {
            int64_t take = w->rem < n - pos ? w->rem : n - pos;
            pos += take; w->rem -= take;
            if (w->rem == 0) w->err = w->pend;
            return pos;
        }
        if (ph == P_END) {
            if (w->rem) { wfail(w, E_SIZE, w->length, w->length - w->rem); continue; }
            account(&w->s, w->delta);
            w->s.index++;
            w->phase = P_LEN;
            return pos;
        }
        if (ph == P_ATTR) {
            if (pos >= n) return pos;
            pos++; w->rem--;
            w->phase = P_DELTA;
            continue;
        }
        if (ph == P_LEN) {
            st = wvarint(w, b, &pos, n, 5, 32, 0, &v);
            if (st == NEED) return pos;
            if (st == BAD) { w->err.code = E_TOO_LONG; return pos; }
            if (v < 0) { w->err.code = E_NEGLEN; w->err.a = v; return pos; }
            w->length = w->rem = v;
            w->pend.code = E_NONE;
            if (v == 0) { wfail(w, E_STRUCT, 0, 0); return pos; }
            w->phase = P_ATTR;
            continue;
        }
        st = wvarint(w, b, &pos, n, ph == P_DELTA ? 10 : 5, ph == P_DELTA ? 64 : 32, 1, &v);
        if (st == NEED) return pos;
        if (st != OK) { wfail(w, st == SHORT ? E_STRUCT : E_TOO_LONG, 0, 0); continue; }
        switch (ph) {
        case P_DELTA: w->delta = v; w->phase = P_OFF; break;
        case P_OFF:
            if (v != (int64_t)w->s.index) wfail(w, E_OFFSET, v, 0);
            else w->phase = P_KLEN;
            break;
        case P_KLEN:
            if (v > w->rem) wfail(w, E_STRUCT, 0, 0);
            else {
                if (v < 0 && w->s.nokey < 0) w->s.nokey = w->s.index;
                wskip(w, v, P_VLEN);
            }
            break;
        case P_VLEN:
            if (v > w->rem) wfail(w, E_STRUCT, 0, 0);
            else wskip(w, v, P_NH);
            break;
        case P_NH:
            if (v < 0) wfail(w, E_NH_NEG, v, 0);
            else if (v > w->rem) wfail(w, E_NH_BIG, v, 0);
            else { w->hleft = v; w->phase = v ? P_HK : P_END; }
            break;
        case P_HK:
            if (v < 0) wfail(w, E_HK_NEG, v, 0);
            else if (v > w->rem) wfail(w, E_STRUCT, 0, 0);
            else wskip(w, v, P_HV);
            break;
        default: /* P_HV */
            if (v > w->rem) wfail(w, E_STRUCT, 0, 0);
            else { w->hleft--; wskip(w, v, w->hleft ? P_HK : P_END); }
            break;
        }
    }
}

static void wfeed(Walker *w, const unsigned char *b, Py_ssize_t n) {
    Py_ssize_t pos = 0;
    for (;;) {
        if (w->phase == P_LEN && w->vn == 0) {
            if (walk_core(b, n, &pos, 0, &w->s, &w->err) != E_NONE) return;
            if (pos >= n) return;
        }
        pos = wrecord(w, b, pos, n);
        if (w->err.code != E_NONE || pos >= n) return;
    }
}

static int Walker_init(Walker *w, PyObject *args, PyObject *kw) {
    long long base_ts, lo, hi;
    static char *names[] = {"count", "base_ts", "lo", "hi", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "nLLL", names, &w->s.count, &base_ts, &lo, &hi)) return -1;
    w->s.base_ts = base_ts; w->s.lo = lo; w->s.hi = hi;
    w->s.index = 0; w->s.max_ts = -1; w->s.bad_index = -1; w->s.bad_ts = -1; w->s.nokey = -1;
    w->err.code = E_NONE; w->pend.code = E_NONE;
    w->phase = P_LEN; w->next = P_LEN; w->vraw = 0; w->vn = 0;
    w->length = w->rem = w->delta = w->hleft = w->skip = 0;
    return 0;
}

/* pieces at least this large are walked with the GIL released */
#define NOGIL_BYTES 4096

static PyObject *Walker_feed(Walker *w, PyObject *arg) {
    Py_buffer view;
    if (w->err.code != E_NONE) Py_RETURN_TRUE;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (view.len >= NOGIL_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        wfeed(w, (const unsigned char *)view.buf, view.len);
        Py_END_ALLOW_THREADS
    } else {
        wfeed(w, (const unsigned char *)view.buf, view.len);
    }
    PyBuffer_Release(&view);
    return PyBool_FromLong(w->err.code != E_NONE);
}

static PyObject *Walker_finish(Walker *w, PyObject *Py_UNUSED(ignored)) {
    if (w->err.code == E_NONE) {
        if (w->phase == P_LEN) {
            if (w->vn || w->s.index < w->s.count) w->err.code = E_PREMATURE;
        } else {
            w->err.code = E_TRUNC; w->err.a = w->length; w->err.b = w->length - w->rem;
        }
    }
    PyObject *msg = error_message(&w->err, w->s.index);
    if (msg == NULL) return NULL;
    PyObject *r = Py_BuildValue("(OnnLnLn)", msg, (Py_ssize_t)0, w->s.index, (long long)w->s.max_ts,
                                w->s.bad_index, (long long)w->s.bad_ts, w->s.nokey);
    Py_DECREF(msg);
    return r;
}

static PyMethodDef Walker_methods[] = {
    {"feed", (PyCFunction)Walker_feed, METH_O, "Walk the next piece; True once the verdict is known."},
    {"finish", (PyCFunction)Walker_finish, METH_NOARGS, "The end of the stream: walk's 7-tuple."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject WalkerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkalite.validation._walk.Walker",
    .tp_basicsize = sizeof(Walker),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The streaming record walk (see kafkalite.validation.pywalk.Walker).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Walker_init,
    .tp_methods = Walker_methods,
};

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, "Walk v2 records (see kafkalite.validation.pywalk)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_walk", NULL, -1, methods};

PyMODINIT_FUNC PyInit__walk(void) {
    if (PyType_Ready(&WalkerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&WalkerType);
    if (PyModule_AddObject(m, "Walker", (PyObject *)&WalkerType) < 0) {
        Py_DECREF(&WalkerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
