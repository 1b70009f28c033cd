# kernel_ext whole-graph function (codegen v3)
# inputs: float64/2
import math
import numpy as np
from kernel_ext.backends.numba_decorators import inline as _inline, kernel as _kernel, call_loop as _call_loop
from kernel_ext.backends.numba_decorators import wrapping_add as _wadd, wrapping_sub as _wsub, wrapping_mul as _wmul

@_kernel
def _assign2_2(d, s):
    b0 = 0 if s.shape[0] == 1 and d.shape[0] != 1 else 1
    b1 = 0 if s.shape[1] == 1 and d.shape[1] != 1 else 1
    for i0 in range(d.shape[0]):
        for i1 in range(d.shape[1]):
            d[i0, i1] = s[i0 * b0, i1 * b1]

@_kernel
def _extent(a):
    lo = np.int64(a.ctypes.data)
    hi = lo + a.itemsize
    for k in range(a.ndim):
        span = (a.shape[k] - 1) * a.strides[k]
        if span < 0:
            lo += span
        else:
            hi += span
    return lo, hi

@_kernel
def _store_back2(d, s):
    if s.ctypes.data == d.ctypes.data and s.strides == d.strides:
        return
    if s.size == 0:
        return
    s_lo, s_hi = _extent(s)
    d_lo, d_hi = _extent(d)
    if s_lo < d_hi and d_lo < s_hi:
        _assign2_2(d, s.copy())
    else:
        _assign2_2(d, s)

s0_K0 = np.int64(1)
s0_K1 = np.int64(0)

s1_K0 = np.int64(1)
s1_K1 = np.int64(0)

s2_K0 = np.int64(1)
s2_K1 = np.int64(0)

s3_K0 = np.float64(0.1)
s3_K1 = np.float64(1.0)
s3_K2 = np.float64(0.0)

s4_K0 = np.int64(1)
s4_K1 = np.int64(0)

@_kernel
def graph(p0):
    k2 = np.int64(0)
    k3 = np.int64(1)
    k5 = np.int64(29)
    k7 = np.int64(0)
    if p0.shape[0] != 30 or p0.shape[1] != 30:
        raise FloatingPointError('kx-fallback')
    w1 = np.ascontiguousarray(p0)
    t4_0 = k2
    t4_1 = k3
    t4_2 = w1
    while True:
        s0_t0 = (t4_0 < k5)
        t6 = s0_t0
        if not t6:
            break
        t8 = k7
        s1_t0 = _wadd(s1_K0, t4_0)
        s1_t1 = (s1_t0 if s1_t0 >= s1_K1 else s1_K1)
        s1_t2 = _wadd(t4_0, s1_K0)
        t9 = s1_t0
        t10 = s1_t1
        t11 = s1_t2
        t12_0 = k7
        t12_1 = t8
        t12_2 = t4_2
        while True:
            s2_t0 = (t12_0 < t10)
            t13 = s2_t0
            if not t13:
                break
            t14 = t12_0
            t15 = t12_2[t14, t14]
            t16 = t12_2[t9, t14]
            s3_t0 = (t15 * s3_K0)
            s3_t1 = (t16 - s3_t0)
            t17 = s3_t1
            t12_2[t9, t14] = t17
            s4_t0 = _wadd(t12_0, s4_K0)
            t19 = s4_t0
            t12_0, t12_1, t12_2, = t19, t14, t12_2,
        t12 = (t12_0, t12_1, t12_2, )
        t20 = t12[2]
        t4_0, t4_1, t4_2, = t11, t9, t20,
    t4 = (t4_0, t4_1, t4_2, )
    t21 = t4[2]
    _store_back2(p0, t21)
    return ()
