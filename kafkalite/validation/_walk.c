/* The record walk of kafkalite.validation.pywalk, compiled: same arguments, same results, same messages.
 * See pywalk.py for the semantics (it is the reference; tests run both over the same corpus). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

enum { OK = 0, NEED = 1, BAD = 2, SHORT = 3 };

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

#define RESULT(msg) Py_BuildValue("(OnnLnLn)", (msg), pos, index, (long long)max_ts, bad_index, \
                                  (long long)bad_ts, nokey)

static PyObject *fail(PyObject *msg, Py_ssize_t pos, Py_ssize_t index, int64_t max_ts, Py_ssize_t bad_index,
                      int64_t bad_ts, Py_ssize_t nokey) {
    if (msg == NULL) return NULL;
    PyObject *r = RESULT(msg);
    Py_DECREF(msg);
    return r;
}

static PyObject *walk(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos, index, count, bad_index, nokey;
    int final;
    long long base_ts_, lo_, hi_, max_ts_, bad_ts_;
    if (!PyArg_ParseTuple(args, "y*npnnLLLLnLn", &view, &pos, &final, &index, &count, &base_ts_, &lo_, &hi_,
                          &max_ts_, &bad_index, &bad_ts_, &nokey))
        return NULL;
    const unsigned char *b = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len;
    int64_t base_ts = base_ts_, lo = lo_, hi = hi_, max_ts = max_ts_, bad_ts = bad_ts_;
    PyObject *res = NULL;
    if (pos < 0) pos = 0;
    while (index < count) {
        if (pos >= n) {
            if (final) {
                res = fail(PyUnicode_FromString("Incorrect declared batch size, premature EOF reached"),
                           pos, index, max_ts, bad_index, bad_ts, nokey);
                goto done;
            }
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
            if (final) {
                res = fail(PyUnicode_FromString("Incorrect declared batch size, premature EOF reached"),
                           pos, index, max_ts, bad_index, bad_ts, nokey);
                goto done;
            }
            break;
        }
        if (rc == BAD) {
            res = fail(PyUnicode_FromString("Found invalid record structure: varint too long"),
                       pos, index, max_ts, bad_index, bad_ts, nokey);
            goto done;
        }
        if (length < 0) {
            res = fail(PyUnicode_FromFormat("Invalid record size: negative length %lld", (long long)length),
                       pos, index, max_ts, bad_index, bad_ts, nokey);
            goto done;
        }
        Py_ssize_t end = p + (Py_ssize_t)length;
        if (end > n) {
            if (final) {
                res = fail(PyUnicode_FromFormat("Invalid record size: expected %lld bytes in record payload, but "
                                                "instead the buffer has only %zd remaining bytes.",
                                                (long long)length, n - p),
                           pos, index, max_ts, bad_index, bad_ts, nokey);
                goto done;
            }
            break;
        }
        Py_ssize_t start = p;
        int64_t delta, off, klen, vlen, nh, hk, hv;
        const char *bad = NULL;
        PyObject *badmsg = NULL;
        if (p >= end) { bad = "Found invalid record structure"; goto record_bad; }
        p++; /* attributes */
        VARINT(delta, 10, 64);
        VARINT(off, 5, 32);
        if (off != (int64_t)index) {
            badmsg = PyUnicode_FromFormat("Inner record offset delta %lld of the record at index %zd does not "
                                          "match its position (expected %zd)", (long long)off, index, index);
            goto record_bad;
        }
        VARINT(klen, 5, 32);
        if (klen >= 0) {
            if (klen > end - p) { bad = "Found invalid record structure"; goto record_bad; }
            p += klen;
        } else if (nokey < 0) {
            nokey = index;
        }
        VARINT(vlen, 5, 32);
        if (vlen >= 0) {
            if (vlen > end - p) { bad = "Found invalid record structure"; goto record_bad; }
            p += vlen;
        }
        VARINT(nh, 5, 32);
        if (nh < 0) {
            badmsg = PyUnicode_FromFormat("Found invalid number of record headers %lld", (long long)nh);
            goto record_bad;
        }
        if (nh > end - p) {
            badmsg = PyUnicode_FromFormat("Found invalid number of record headers. %lld is larger than the "
                                          "remaining size of the buffer", (long long)nh);
            goto record_bad;
        }
        for (int64_t h = 0; h < nh; h++) {
            VARINT(hk, 5, 32);
            if (hk < 0) {
                badmsg = PyUnicode_FromFormat("Invalid negative header key size %lld", (long long)hk);
                goto record_bad;
            }
            if (hk > end - p) { bad = "Found invalid record structure"; goto record_bad; }
            p += hk;
            VARINT(hv, 5, 32);
            if (hv >= 0) {
                if (hv > end - p) { bad = "Found invalid record structure"; goto record_bad; }
                p += hv;
            }
        }
        if (p != end) {
            badmsg = PyUnicode_FromFormat("Invalid record size: expected to read %lld bytes in record payload, "
                                          "but instead read %zd", (long long)length, p - start);
            goto record_bad;
        }
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
        bad = rc == BAD ? "Found invalid record structure: varint too long" : "Found invalid record structure";
    record_bad:
        if (badmsg == NULL) badmsg = PyUnicode_FromString(bad);
        res = fail(badmsg, pos, index, max_ts, bad_index, bad_ts, nokey);
        goto done;
    }
    if (index >= count && pos < n) {
        res = fail(PyUnicode_FromString("Incorrect declared batch size, records still remaining in file"),
                   pos, index, max_ts, bad_index, bad_ts, nokey);
        goto done;
    }
    res = RESULT(Py_None);
done:
    PyBuffer_Release(&view);
    return res;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, "Walk v2 records (see kafkalite.validation.pywalk)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_walk", NULL, -1, methods};

PyMODINIT_FUNC PyInit__walk(void) { return PyModule_Create(&module); }
