# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""send()'s fast path, compiled. Optional: producer.py's Python send() is the reference and
the fallback; tests check that both put the same records in the same places, and `make test`
runs the producer tests on each.

Why compiled: in Python, a send() that only appends to an open batch costs ~0.9 us a record
on these machines, and ~0.35 us of that is the accumulator lock (two method calls) and the
future (a Python object and two attribute stores). Here the lock is one atomic try-acquire,
the future one allocation, a batch's fields are read at their slot offsets, and a keyed
record's partition is murmur2 over its key (~10 ns) instead of a trip through the keyed
stage (staging.py) that the Python path needs to amortise its hashing. Anything off the
common path (serializers, interceptors, headers, caller timestamps, a full or missing batch,
a custom partitioner, a busy lock) goes back to the Python code, before anything has changed
or, past the sticky partition's byte count, exactly where the Python path would, so every
decision stays written once (benchmarks/bench_producer_send.py compares the two).

FastLock replaces threading.Lock as the accumulator's lock when this module is built; the
Python side uses it the same way (with-blocks, acquire/release).
"""
cimport cython
from cpython cimport array
from cpython.pythread cimport (PyThread_type_lock, PyThread_allocate_lock, PyThread_free_lock,
                               PyThread_acquire_lock, PyThread_release_lock, NOWAIT_LOCK)
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from posix.time cimport clock_gettime, timespec, CLOCK_REALTIME


cdef extern from "Python.h":
    # Where a __slots__ field lives inside its object: read once per class, so the fast path
    # reads a batch's fields directly instead of through attribute lookup (~15 ns each).
    ctypedef struct PyMemberDef:
        Py_ssize_t offset
    ctypedef struct PyMemberDescrObject:
        PyMemberDef *d_member
    ctypedef enum PyLockStatus:
        PY_LOCK_FAILURE, PY_LOCK_ACQUIRED, PY_LOCK_INTR
    PyLockStatus PyThread_acquire_lock_timed(PyThread_type_lock, long long microseconds,
                                             int intr_flag) nogil


@cython.final
cdef class FastLock:
    """A mutex like threading.Lock whose holder the compiled fast path can try to take
    without a Python call."""
    cdef PyThread_type_lock lock
    cdef bint held

    def __cinit__(self):
        self.lock = PyThread_allocate_lock()
        if self.lock == NULL:
            raise MemoryError("cannot allocate a lock")

    def __dealloc__(self):
        if self.lock != NULL:
            if self.held:
                PyThread_release_lock(self.lock)
            PyThread_free_lock(self.lock)

    cdef inline bint try_acquire(self) noexcept:
        if PyThread_acquire_lock(self.lock, NOWAIT_LOCK):
            self.held = True
            return True
        return False

    cdef inline void fast_release(self) noexcept:
        self.held = False
        PyThread_release_lock(self.lock)

    cdef bint wait_acquire(self, double timeout) except -1:
        """Block (without the GIL) until the lock is ours or timeout (< 0: none) passes. Not
        interruptible by signals, like threading.Lock before Python 3.2: the accumulator
        holds it for microseconds."""
        cdef long long us = -1 if timeout < 0 else <long long>(timeout * 1e6)
        cdef int r
        if self.try_acquire():
            return True
        with nogil:
            r = PyThread_acquire_lock_timed(self.lock, us, 0)
        if r == PY_LOCK_ACQUIRED:
            self.held = True
            return True
        return False

    def acquire(self, bint blocking=True, double timeout=-1):
        if not blocking:
            return self.try_acquire()
        return self.wait_acquire(timeout)

    def release(self):
        if not self.held:
            raise RuntimeError("release unlocked lock")
        self.fast_release()

    def locked(self):
        return self.held

    def __enter__(self):
        return self.wait_acquire(-1)

    def __exit__(self, *exc):
        self.release()


cdef class FutureCore:
    """The two fields of a record's future (batch.FutureRecordMetadata adds the methods)."""
    cdef public object _result
    cdef public Py_ssize_t _index


cpdef unsigned int murmur2(bytes key):
    """Kafka's murmur2 (seed 0x9747b28c) of a key, as an unsigned 32-bit value; the same as
    partitioners.murmur2 (tested)."""
    cdef const unsigned char *d = key
    cdef Py_ssize_t length = len(key), i, n4 = length & ~3
    cdef unsigned int m = 0x5BD1E995, h = 0x9747B28C ^ <unsigned int>length, k
    for i in range(0, n4, 4):
        k = d[i] | (<unsigned int>d[i + 1] << 8) | (<unsigned int>d[i + 2] << 16) \
            | (<unsigned int>d[i + 3] << 24)
        k *= m
        k ^= k >> 24
        k *= m
        h *= m
        h ^= k
    i = length & 3
    if i == 3:
        h ^= <unsigned int>d[n4 + 2] << 16
    if i >= 2:
        h ^= <unsigned int>d[n4 + 1] << 8
    if i >= 1:
        h ^= d[n4]
        h *= m
    h ^= h >> 13
    h *= m
    h ^= h >> 15
    return h


cdef inline double now_ms() noexcept:
    """time.time() * 1000.0, as send()'s Python path computes it."""
    cdef timespec ts
    clock_gettime(CLOCK_REALTIME, &ts)
    return (<double>ts.tv_sec + <double>ts.tv_nsec * 1e-9) * 1000.0


cdef inline int push(array.array a, double x) except -1:
    cdef Py_ssize_t n = len(a)
    array.resize_smart(a, n + 1)
    a.data.as_doubles[n] = x
    return 0


cdef Py_ssize_t offset_of(cls, str name) except -1:
    d = cls.__dict__[name]
    if type(d).__name__ != "member_descriptor":
        raise TypeError(f"{cls.__name__}.{name} is not a __slots__ field")
    return (<PyMemberDescrObject *><void *>d).d_member.offset


cdef inline PyObject *get(object o, Py_ssize_t off) noexcept:
    """A field's value, borrowed (NULL when unset)."""
    return (<PyObject **>(<char *><void *>o + off))[0]


cdef inline void put(object o, Py_ssize_t off, object v) noexcept:
    cdef PyObject **slot = <PyObject **>(<char *><void *>o + off)
    cdef PyObject *old = slot[0]
    Py_INCREF(v)
    slot[0] = <PyObject *>v
    Py_XDECREF(old)


@cython.final
cdef class Fields:
    """Offsets of the ProducerBatch fields send() touches."""
    cdef object cls
    cdef Py_ssize_t size, max_bytes, keys, values, timestamps, headers, callbacks, result

    def __init__(self, cls):
        self.cls = cls
        self.size = offset_of(cls, "size")
        self.max_bytes = offset_of(cls, "max_bytes")
        self.keys = offset_of(cls, "keys")
        self.values = offset_of(cls, "values")
        self.timestamps = offset_of(cls, "timestamps")
        self.headers = offset_of(cls, "headers")
        self.callbacks = offset_of(cls, "callbacks")
        self.result = offset_of(cls, "result")


cdef class FastSend:
    """Producer.send for one producer (installed as the instance's `send`)."""
    cdef dict fast, stages, sticky
    cdef FastLock lock
    cdef Fields batch
    cdef object py_send, slow_send, future_type
    cdef bint builtin, keyed_murmur
    cdef object choose
    cdef Py_ssize_t small

    def __init__(self, producer, py_send, future_type, batch_type):
        self.fast = producer._fast
        self.stages = producer._stages
        self.sticky = producer._sticky_state
        self.lock = producer._acc_lock
        self.py_send = py_send              # the Python fast path (decides everything else)
        self.slow_send = producer._send     # where the Python fast path itself falls back
        self.future_type = future_type
        self.batch = Fields(batch_type)
        self.builtin = producer._builtin
        self.keyed_murmur = producer._stage_keyed
        self.choose = producer._choose_partition
        self.small = producer._stage_max    # well under batch.size and max.request.size

    cdef inline FutureCore future(self, result, Py_ssize_t i):
        cdef FutureCore f = FutureCore.__new__(self.future_type)
        f._result = result
        f._index = i
        return f

    def send(self, topic, value=None, key=None, headers=None, partition=None,
             timestamp_ms=None, callback=None):
        cdef Py_ssize_t n, p, rec
        cdef bint sticky = False, chosen = False
        if headers is not None or timestamp_ms is not None \
                or (value is not None and type(value) is not bytes) \
                or (key is not None and type(key) is not bytes):
            return self.py_send(topic, value, key, headers, partition, timestamp_ms, callback)
        st = self.fast.get(topic)
        if type(st) is not tuple or len(<tuple>st) != 3:
            return self.py_send(topic, value, key, headers, partition, timestamp_ms, callback)
        n = (<tuple>st)[0]
        rec = 12 + (len(<bytes>value) if value is not None else 0)
        if partition is not None:
            if type(partition) is not int or not 0 <= partition < n:
                return self.py_send(topic, value, key, headers, partition, timestamp_ms,
                                    callback)
            p = partition
        elif n == 1:
            p = 0
        elif key is None:
            if not self.builtin:
                return self.py_send(topic, value, key, headers, partition, timestamp_ms,
                                    callback)
            ss = self.sticky.get(topic)
            if type(ss) is list and (<list>ss)[0] < n:
                p = (<list>ss)[0]
                sticky = True
            elif rec <= self.small:
                # A new sticky choice (after a batch boundary): what the Python path's _send
                # does before its append, without its checks, which cannot refuse a record
                # this small (the choice counts the record's bytes itself, so from here on a
                # fallback goes to _send with the partition, as the Python path would).
                p = self.choose(topic, None, value, n)
                chosen = True
            else:
                return self.py_send(topic, value, key, headers, partition, timestamp_ms,
                                    callback)
        elif self.keyed_murmur:
            # Java's default partitioner for a keyed record, hashed here (~10 ns) instead of
            # staged and hashed in bulk as the Python path does (staging.py).
            p = (murmur2(key) & 0x7FFFFFFF) % n
        else:
            return self.py_send(topic, value, key, headers, partition, timestamp_ms, callback)
        if key is not None:
            rec += len(<bytes>key)
        if not self.lock.try_acquire():  # busy: the Python code waits for it
            if chosen:
                return self.slow_send(topic, value, key, None, p, None, callback, True)
            return self.py_send(topic, value, key, headers, partition, timestamp_ms, callback)
        if sticky:
            (<list>ss)[1] += rec
        cdef double ts = now_ms()
        cdef Py_ssize_t i = -1
        try:
            b = self.to_batch(<list>(<tuple>st)[1], p, topic, value, key, callback, rec, ts,
                              &i)
            if b is not None:
                result = <object>get(b, self.batch.result)
        finally:
            self.lock.fast_release()
        if b is None:
            return self.slow_send(topic, value, key, None, p, ts, callback, partition is None)
        return self.future(result, i)

    cdef object to_batch(self, list opened, Py_ssize_t p, topic, value, key, callback,
                         Py_ssize_t rec, double ts, Py_ssize_t *index):
        """Append to partition p's open batch (the caller holds the lock): the batch, with
        the record's index in it at *index; None, with nothing changed, when the batch has
        no room (or there is none, or the topic has staged records that must go first, or a
        field is not what the Python path would append to)."""
        cdef Fields F = self.batch
        cdef Py_ssize_t size, i
        cdef PyObject *headers
        cdef PyObject *callbacks
        if p >= len(opened):
            return None
        b = opened[p]
        if type(b) is not F.cls or (self.stages and topic in self.stages):
            return None
        if get(b, F.size) == NULL or get(b, F.max_bytes) == NULL or get(b, F.result) == NULL:
            return None
        keys = <object>get(b, F.keys) if get(b, F.keys) != NULL else None
        values = <object>get(b, F.values) if get(b, F.values) != NULL else None
        stamps = <object>get(b, F.timestamps) if get(b, F.timestamps) != NULL else None
        headers = get(b, F.headers)
        callbacks = get(b, F.callbacks)
        if type(keys) is not list or type(values) is not list \
                or type(stamps) is not array.array or headers == NULL or callbacks == NULL \
                or (headers != <PyObject *>None and type(<object>headers) is not list) \
                or (callbacks != <PyObject *>None and type(<object>callbacks) is not list):
            return None
        size = <object>get(b, F.size)
        size += rec
        if size > <Py_ssize_t><object>get(b, F.max_bytes):
            return None
        put(b, F.size, size)
        i = len(<list>keys)
        (<list>keys).append(key)
        (<list>values).append(value)
        push(<array.array>stamps, ts)
        if headers != <PyObject *>None:
            (<list>headers).append(None)
        if callback is not None:
            if callbacks == <PyObject *>None:
                put(b, F.callbacks, [])
            (<list>get(b, F.callbacks)).append((i, callback))
        index[0] = i
        return b
