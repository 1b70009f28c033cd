# kernel_ext whole-graph function (codegen v3)
# inputs: float64/2, float64/1
import math
import numpy as np
from kernel_ext.backends.numba_decorators import inline as _inline, kernel as _kernel, call_loop as _call_loop
from kernel_ext.backends.numba_decorators import wrapping_add as _wadd, wrapping_sub as _wsub, wrapping_mul as _wmul

@_inline
def _mm_float(a, b, o, f, d, pp, dims, st, sa0, sa1, sb0, sb2, so1, so2):
    nb = o.shape[0]
    n = a.shape[1]
    m = a.shape[2]
    p = b.shape[2]
    if nb == 0 or n == 0 or p == 0:
        return
    if m == 0:
        o[:, :, :] = 0
        return
    pp[0] = a.ctypes.data
    pp[1] = b.ctypes.data
    pp[2] = o.ctypes.data
    dims[0] = nb
    dims[1] = n
    dims[2] = m
    dims[3] = p
    st[0] = sa0
    st[1] = sb0
    st[2] = o.strides[0]
    st[3] = sa1
    st[4] = a.strides[2]
    st[5] = b.strides[1]
    st[6] = sb2
    st[7] = so1
    st[8] = so2
    _call_loop(f, pp.ctypes.data, dims.ctypes.data, st.ctypes.data, d)


@_inline
def _sum_loop(x, f, d, pp, st, dims, acc):
    acc[0] = 0
    pp[0] = acc.ctypes.data
    pp[1] = x.ctypes.data
    pp[2] = acc.ctypes.data
    st[0] = 0
    st[1] = x.strides[0]
    st[2] = 0
    dims[0] = x.shape[0]
    _call_loop(f, pp.ctypes.data, dims.ctypes.data, st.ctypes.data, d)
    return acc[0]


s0_K0 = np.float64(1.0)
s0_K1 = np.float64(0.0)

@_kernel
def s0_flat(start, stop, in0, in1, out0):
    bad = False
    for blk in range(start, stop, 1024):
        m = min(1024, stop - blk)
        b0 = in0[blk:blk + m]
        b1 = in1[blk:blk + m]
        bo0 = out0[blk:blk + m]
        for j in range(m):
            x0_0 = b0[j]
            x1_0 = b1[j]
            t0 = (x0_0 - x1_0)
            bo0[j] = t0
    return bad

s1_K0 = np.float64(1.0)
s1_K1 = np.float64(0.0)

@_kernel
def s1_flat(start, stop, in0, out0):
    bad = False
    for blk in range(start, stop, 1024):
        m = min(1024, stop - blk)
        b0 = in0[blk:blk + m]
        bo0 = out0[blk:blk + m]
        for j in range(m):
            x0_0 = b0[j]
            t0 = (x0_0 * x0_0)
            bo0[j] = t0
    return bad

s3_K0 = np.float64(1.0)
s3_K1 = np.float64(0.0)
s3_K2 = np.float64(1e-10)

s4_K0 = np.float64(1.0)
s4_K1 = np.float64(0.0)

@_kernel
def s4_flat(start, stop, in0, in1, in2, out0):
    bad = False
    for blk in range(start, stop, 1024):
        m = min(1024, stop - blk)
        b0 = in0[blk:blk + m]
        b1 = in1[blk:blk + m]
        b2 = in2[blk:blk + m]
        bo0 = out0[blk:blk + m]
        for j in range(m):
            x0_0 = b0[j]
            x1_0 = b1[j]
            t0 = (x0_0 / x1_0)
            x2_0 = b2[j]
            t1 = (x2_0 + t0)
            bo0[j] = t1
    return bad

@_kernel
def graph(p0, p1, c0, c1, la):
    f0 = la[0]
    d0 = la[1]
    f1 = la[2]
    d1 = la[3]
    xo_pp = np.empty(3, np.uintp)
    xo_dims = np.empty(4, np.intp)
    xo_st = np.empty(9, np.intp)
    sum_tmp8 = np.empty(0, np.float64)
    s2_pp = np.empty(3, np.uintp)
    s2_st = np.empty(3, np.intp)
    s2_dims = np.empty(1, np.intp)
    s2_acc = np.empty(1, np.float64)
    t7_z0 = np.empty((0,), np.float64)
    t7_z1 = np.empty((0,), np.float64)
    if p0.shape[0] != 8 or p0.shape[1] != 8 or p1.shape[0] != 8:
        raise FloatingPointError('kx-fallback')
    t1 = np.zeros((8,), np.float64)
    ma3 = p0[None, :, :]
    mb4 = t1[None, :, None]
    if ma3.shape[2] != mb4.shape[1]:
        raise FloatingPointError('kx-fallback')
    mo5 = np.empty((ma3.shape[1], ), np.float64)
    _mm_float(ma3, mb4, mo5[None, :, None], f0, d0, xo_pp, xo_dims, xo_st, 0, ma3.strides[1], 0, 0, mo5.strides[0], 0)
    t2 = mo5
    if t2.shape != p1.shape:
        raise FloatingPointError('kx-fallback')
    s0_size = p1.size
    t6 = np.empty(s0_size, np.float64)
    s0_bad = s0_flat(0, s0_size, p1, t2, t6)
    if s0_bad:
        raise FloatingPointError('kx-fallback')
    t7_0 = t1
    t7_1 = t6
    t7_sp0 = t7_z0
    t7_own0 = False
    t7_sp1 = t7_z1
    t7_own1 = False
    while True:
        s1_size = t7_1.size
        if sum_tmp8.size < s1_size:
            sum_tmp8 = np.empty(s1_size, np.float64)
        t9 = sum_tmp8[:s1_size]
        s1_bad = s1_flat(0, s1_size, t7_1, t9)
        if s1_bad:
            raise FloatingPointError('kx-fallback')
        t10 = _sum_loop(t9, f1, d1, s2_pp, s2_st, s2_dims, s2_acc)
        s3_t0 = np.sqrt(t10)
        s3_t1 = (s3_t0 > s3_K2)
        t11 = s3_t1
        if not t11:
            break
        v13 = p0[:, :]
        b14 = 1
        if c0.shape[0] != 1:
            if b14 != 1 and b14 != c0.shape[0]:
                raise FloatingPointError('kx-fallback')
            b14 = c0.shape[0]
        if c1.shape[0] != 1:
            if b14 != 1 and b14 != c1.shape[0]:
                raise FloatingPointError('kx-fallback')
            b14 = c1.shape[0]
        for q15 in range(b14):
            k16 = np.int64(c0[q15 if c0.shape[0] != 1 else 0])
            if k16 < -v13.shape[0] or k16 >= v13.shape[0]:
                raise FloatingPointError('kx-fallback')
            k17 = np.int64(c1[q15 if c1.shape[0] != 1 else 0])
            if k17 < -v13.shape[1] or k17 >= v13.shape[1]:
                raise FloatingPointError('kx-fallback')
        t12 = np.empty((b14, ), np.float64)
        for q18 in range(b14):
            k19 = np.int64(c0[q18 if c0.shape[0] != 1 else 0])
            if k19 < 0:
                k19 += v13.shape[0]
            k20 = np.int64(c1[q18 if c1.shape[0] != 1 else 0])
            if k20 < 0:
                k20 += v13.shape[1]
            t12[q18] = v13[k19, k20]
        if t12.shape != t7_1.shape:
            raise FloatingPointError('kx-fallback')
        if t7_0.shape != t7_1.shape:
            raise FloatingPointError('kx-fallback')
        s4_size = t7_1.size
        if t7_sp0.size == s4_size:
            t21 = t7_sp0
        else:
            t21 = np.empty(s4_size, np.float64)
        s4_bad = s4_flat(0, s4_size, t7_1, t12, t7_0, t21)
        if s4_bad:
            raise FloatingPointError('kx-fallback')
        ma23 = p0[None, :, :]
        mb24 = t21[None, :, None]
        if ma23.shape[2] != mb24.shape[1]:
            raise FloatingPointError('kx-fallback')
        mo25 = np.empty((ma23.shape[1], ), np.float64)
        _mm_float(ma23, mb24, mo25[None, :, None], f0, d0, xo_pp, xo_dims, xo_st, 0, ma23.strides[1], 0, 0, mo25.strides[0], 0)
        t22 = mo25
        if t22.shape != p1.shape:
            raise FloatingPointError('kx-fallback')
        s5_size = p1.size
        if t7_sp1.size == s5_size:
            t26 = t7_sp1
        else:
            t26 = np.empty(s5_size, np.float64)
        s5_bad = s0_flat(0, s5_size, p1, t22, t26)
        if s5_bad:
            raise FloatingPointError('kx-fallback')
        t7_sp0 = t7_0 if t7_own0 else t7_z0
        t7_sp1 = t7_1 if t7_own1 else t7_z1
        t7_0, t7_1, = t21, t26,
        t7_own0 = True
        t7_own1 = True
    t7 = (t7_0, t7_1, )
    t27 = t7[0]
    return t27
