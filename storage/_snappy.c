/* Streaming decoder of one raw snappy block (kafkalite_storage.compression): output comes out in pieces of a
 * bounded size, so a block that declares 1 GiB never occupies more than a piece plus the history window.
 *
 * Which blocks it accepts is exactly what cramjam's decompress_raw (the snap crate) accepts, which the broker
 * used before: empty input, a header varint that snap cannot read or that declares more than 2^32-1 bytes,
 * a literal or copy running past the input or past the declared size, a copy offset of 0 or beyond what was
 * produced, and an output shorter than declared are all errors (`snappy_error`). One quirk of snap is kept:
 * a literal with a length extension needs 4 input bytes after its tag, whatever the extension's size.
 *
 * Copies reach back at most `window` bytes in the blocks every real encoder writes (snappy compresses 64 KiB
 * fragments independently: C++, snappy-java, librdkafka, snap, Go). A copy reaching further back than the kept
 * history raises `FarCopy`; the caller then decodes the whole block another way.
 *
 * read() runs without the GIL. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static PyObject *SnappyError;
static PyObject *FarCopy;

enum { D_OK = 0, D_CORRUPT = 1, D_FAR = 2 };

typedef struct {
    PyObject_HEAD
    Py_buffer in;
    int have_in;
    Py_ssize_t s;            /* input position */
    uint64_t size;           /* declared output length */
    uint64_t d;              /* output produced so far */
    uint64_t lit_left;       /* rest of a literal cut by the end of a read */
    unsigned char *win;      /* history (at most `window` bytes) followed by the current read's output */
    Py_ssize_t cap, wlen, window;
    int state;               /* 0 running, 1 done, 2 failed */
} RawSnappy;

static int RawSnappy_init(RawSnappy *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"data", "window", NULL};
    PyObject *data;
    Py_ssize_t window = 256 * 1024;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|n", names, &data, &window)) return -1;
    if (self->have_in) { PyBuffer_Release(&self->in); self->have_in = 0; }
    if (PyObject_GetBuffer(data, &self->in, PyBUF_SIMPLE) < 0) return -1;
    self->have_in = 1;
    self->window = window < 64 ? 64 : window;
    self->d = 0; self->lit_left = 0; self->wlen = 0; self->state = 0;
    const unsigned char *b = (const unsigned char *)self->in.buf;
    Py_ssize_t n = self->in.len;
    if (n == 0) { PyErr_SetString(SnappyError, "empty snappy block"); return -1; }
    /* snap's read_varu64: bytes shifted by 7*i while the shift is < 64; bits shifted out are lost */
    uint64_t v = 0;
    Py_ssize_t i = 0;
    for (;; i++) {
        if (i >= n || 7 * i >= 64) { PyErr_SetString(SnappyError, "bad snappy block header"); return -1; }
        unsigned char c = b[i];
        if (c < 0x80) { v |= (uint64_t)c << (7 * i); break; }
        v |= (uint64_t)(c & 0x7F) << (7 * i);
    }
    if (v > 0xFFFFFFFFull) { PyErr_SetString(SnappyError, "snappy block declares more than 2^32-1 bytes"); return -1; }
    self->size = v;
    self->s = i + 1;
    return 0;
}

static void RawSnappy_dealloc(RawSnappy *self) {
    if (self->have_in) PyBuffer_Release(&self->in);
    PyMem_RawFree(self->win);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* decode until `limit` bytes of output are in the window (or the input ends) */
static int decode(RawSnappy *r, Py_ssize_t limit) {
    const unsigned char *in = (const unsigned char *)r->in.buf;
    Py_ssize_t n = r->in.len;
    unsigned char *w = r->win;
    while (r->wlen < limit) {
        if (r->lit_left) {
            uint64_t take = r->lit_left;
            if (take > (uint64_t)(limit - r->wlen)) take = (uint64_t)(limit - r->wlen);
            memcpy(w + r->wlen, in + r->s, (size_t)take);
            r->s += (Py_ssize_t)take; r->wlen += (Py_ssize_t)take; r->d += take; r->lit_left -= take;
            continue;
        }
        if (r->s >= n) break;
        unsigned char tag = in[r->s++];
        if ((tag & 3) == 0) {
            uint64_t len = (uint64_t)(tag >> 2) + 1;
            if (len >= 61) {
                if (r->s + 4 > n) return D_CORRUPT;   /* snap wants 4 bytes here whatever the extension's size */
                int bc = (int)len - 60;
                uint32_t x = 0;
                for (int k = 0; k < bc; k++) x |= (uint32_t)in[r->s + k] << (8 * k);
                len = (uint64_t)x + 1;
                r->s += bc;
            }
            if ((uint64_t)(n - r->s) < len || r->size - r->d < len) return D_CORRUPT;
            r->lit_left = len;
            continue;
        }
        int ntag = (tag & 3) == 1 ? 1 : (tag & 3) == 2 ? 2 : 4;
        if (r->s + 4 > n) {
            if (ntag == 4 || r->s + ntag > n) return D_CORRUPT;
        }
        uint64_t offset, len;
        if (ntag == 1) {
            len = 4 + ((tag >> 2) & 7);
            offset = ((uint64_t)(tag >> 5) << 8) | in[r->s];
        } else if (ntag == 2) {
            len = (uint64_t)(tag >> 2) + 1;
            offset = (uint64_t)in[r->s] | ((uint64_t)in[r->s + 1] << 8);
        } else {
            len = (uint64_t)(tag >> 2) + 1;
            offset = (uint64_t)in[r->s] | ((uint64_t)in[r->s + 1] << 8) | ((uint64_t)in[r->s + 2] << 16)
                     | ((uint64_t)in[r->s + 3] << 24);
        }
        r->s += ntag;
        if (offset == 0 || r->d < offset) return D_CORRUPT;
        if (r->d + len > r->size) return D_CORRUPT;
        if (offset > (uint64_t)r->wlen) return D_FAR;
        unsigned char *dst = w + r->wlen;
        const unsigned char *src = dst - offset;
        if (offset >= len) memcpy(dst, src, (size_t)len);
        else for (uint64_t k = 0; k < len; k++) dst[k] = src[k];   /* overlapping: a repeated pattern */
        r->wlen += (Py_ssize_t)len; r->d += len;
    }
    if (r->s >= n && r->lit_left == 0 && r->d != r->size) return D_CORRUPT;
    return D_OK;
}

static PyObject *RawSnappy_read(RawSnappy *self, PyObject *arg) {
    Py_ssize_t max_out = PyLong_AsSsize_t(arg);
    if (max_out == -1 && PyErr_Occurred()) return NULL;
    if (max_out < 1) max_out = 1;
    if (self->state == 2) { PyErr_SetString(SnappyError, "snappy block already failed"); return NULL; }
    if (self->state == 1 || (self->s >= self->in.len && self->lit_left == 0 && self->d == self->size))
        return PyBytes_FromStringAndSize(NULL, 0);
    if (self->wlen > self->window) {   /* keep only the history a copy may reach */
        memmove(self->win, self->win + self->wlen - self->window, (size_t)self->window);
        self->wlen = self->window;
    }
    Py_ssize_t need = self->wlen + max_out + 64;   /* a copy may overshoot the limit by up to 64 bytes */
    if (need > self->cap) {
        unsigned char *nw = PyMem_RawRealloc(self->win, (size_t)need);
        if (nw == NULL) return PyErr_NoMemory();
        self->win = nw;
        self->cap = need;
    }
    Py_ssize_t start = self->wlen;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = decode(self, start + max_out);
    Py_END_ALLOW_THREADS
    if (rc == D_CORRUPT) {
        self->state = 2;
        PyErr_SetString(SnappyError, "corrupt snappy block");
        return NULL;
    }
    if (rc == D_FAR) {
        self->state = 2;
        PyErr_SetString(FarCopy, "snappy copy reaches beyond the kept history");
        return NULL;
    }
    if (self->wlen == start) self->state = 1;
    return PyBytes_FromStringAndSize((const char *)self->win + start, self->wlen - start);
}

static PyObject *RawSnappy_size(RawSnappy *self, void *closure) {
    return PyLong_FromUnsignedLongLong(self->size);
}

static PyObject *RawSnappy_produced(RawSnappy *self, void *closure) {
    return PyLong_FromUnsignedLongLong(self->d);
}

static PyGetSetDef RawSnappy_getset[] = {
    {"size", (getter)RawSnappy_size, NULL, "the output length the block declares", NULL},
    {"produced", (getter)RawSnappy_produced, NULL, "output bytes produced so far", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef RawSnappy_methods[] = {
    {"read", (PyCFunction)RawSnappy_read, METH_O, "Up to about n more output bytes (b'' at the end)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RawSnappyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkalite_storage._snappy.RawSnappy",
    .tp_basicsize = sizeof(RawSnappy),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "RawSnappy(block, window=262144): streaming decoder of one raw snappy block.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)RawSnappy_init,
    .tp_dealloc = (destructor)RawSnappy_dealloc,
    .tp_methods = RawSnappy_methods,
    .tp_getset = RawSnappy_getset,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_snappy", NULL, -1, NULL};

PyMODINIT_FUNC PyInit__snappy(void) {
    if (PyType_Ready(&RawSnappyType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    SnappyError = PyErr_NewException("kafkalite_storage._snappy.SnappyError", PyExc_ValueError, NULL);
    FarCopy = PyErr_NewException("kafkalite_storage._snappy.FarCopy", PyExc_ValueError, NULL);
    Py_INCREF(&RawSnappyType);
    if (SnappyError == NULL || FarCopy == NULL || PyModule_AddObject(m, "RawSnappy", (PyObject *)&RawSnappyType) < 0
        || PyModule_AddObject(m, "SnappyError", SnappyError) < 0 || PyModule_AddObject(m, "FarCopy", FarCopy) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
