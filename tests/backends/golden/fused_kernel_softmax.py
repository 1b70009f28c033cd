# kernel_ext generated kernel (codegen v3, target cpu)
# segment: subtract+exp+sum
# inputs: float64/2, float64/2
# outputs: float64/2, float64/2
import math
import numpy as np
from kernel_ext.backends.numba_decorators import inline as _inline, kernel as _kernel, call_loop as _call_loop
from kernel_ext.backends.numba_decorators import wrapping_add as _wadd, wrapping_sub as _wsub, wrapping_mul as _wmul

K0 = np.float64(0.0)
K1 = np.float64(1.0)

@_kernel
def k_flat(start, stop, in0, in1, out0, f0, d0):
    bad = False
    pp = np.empty((1, 4), np.uintp)
    st = np.empty((1, 4), np.intp)
    dims = np.empty(1, np.intp)
    ci0_0 = np.empty(1024, np.float64)
    wl = np.empty(1024, np.float64)
    cs = np.empty(64, np.float64)
    pp[0, 0] = ci0_0.ctypes.data
    st[0, 0] = 8
    for l in range(min(1024, stop - start)):
        wl[l] = K0
    nb = 0
    nc = 0
    used = 0
    for blk in range(start, stop, 1024):
        m = min(1024, stop - blk)
        b0 = in0[blk:blk + m]
        b1 = in1[blk:blk + m]
        bo0 = out0[blk:blk + m]
        for j in range(m):
            x0_0 = b0[j]
            x1_0 = b1[j]
            t0 = (x0_0 - x1_0)
            ci0_0[j] = t0
        pp[0, 1] = bo0.ctypes.data
        st[0, 1] = bo0.strides[0]
        dims[0] = m
        _call_loop(f0, pp[0].ctypes.data, dims.ctypes.data, st[0].ctypes.data, d0)
        for j in range(m):
            r1_1 = bo0[j]
            a = wl[j]
            v = r1_1
            wl[j] = (a + v)
        nb += 1
        used = max(used, m)
        if nb == 64:
            w = 1
            while w < used:
                w *= 2
            while w > 1:
                w //= 2
                for l in range(min(w, used - w)):
                    a = wl[l]
                    v = wl[l + w]
                    wl[l] = (a + v)
            r = wl[0]
            for l in range(used):
                wl[l] = K0
            c = nc
            lvl = 0
            while c & 1:
                a = cs[lvl]
                v = r
                r = (a + v)
                lvl += 1
                c >>= 1
            cs[lvl] = r
            nc += 1
            nb = 0
            used = 0
    if used > 0:
        w = 1
        while w < used:
            w *= 2
        while w > 1:
            w //= 2
            for l in range(min(w, used - w)):
                a = wl[l]
                v = wl[l + w]
                wl[l] = (a + v)
        r = wl[0]
        for l in range(used):
            wl[l] = K0
        c = nc
        lvl = 0
        while c & 1:
            a = cs[lvl]
            v = r
            r = (a + v)
            lvl += 1
            c >>= 1
        cs[lvl] = r
        nc += 1
        nb = 0
        used = 0
    r = K0
    lvl = 0
    while nc:
        if nc & 1:
            a = cs[lvl]
            v = r
            r = (a + v)
        lvl += 1
        nc >>= 1
    return bad, r

@_kernel
def k_nd(n0, n1, in0, in1, out0, acc, f0, d0):
    bad = False
    pp = np.empty((1, 4), np.uintp)
    st = np.empty((1, 4), np.intp)
    dims = np.empty(1, np.intp)
    ci0_0 = np.empty(1024, np.float64)
    wl = np.empty(1024, np.float64)
    cs = np.empty(64, np.float64)
    rc0 = np.empty(1024, np.float64)
    rc1 = np.empty(1024, np.float64)
    pp[0, 0] = ci0_0.ctypes.data
    st[0, 0] = 8
    for l in range(min(1024, n1)):
        wl[l] = K0
    for i0 in range(n0):
        nb = 0
        nc = 0
        used = 0
        for blk in range(0, n1, 1024):
            m = min(1024, n1 - blk)
            rw0 = in0[i0, blk:blk + m]
            if rw0.strides[0] == 8:
                b0 = np.ascontiguousarray(rw0)
            else:
                for j in range(m):
                    rc0[j] = rw0[j]
                b0 = rc0[:m]
            rw1 = in1[i0, blk:blk + m]
            if rw1.strides[0] == 8:
                b1 = np.ascontiguousarray(rw1)
            else:
                for j in range(m):
                    rc1[j] = rw1[j]
                b1 = rc1[:m]
            bo0 = out0[i0, blk:blk + m]
            for j in range(m):
                x0_0 = b0[j]
                x1_0 = b1[j]
                t0 = (x0_0 - x1_0)
                ci0_0[j] = t0
            pp[0, 1] = bo0.ctypes.data
            st[0, 1] = bo0.strides[0]
            dims[0] = m
            _call_loop(f0, pp[0].ctypes.data, dims.ctypes.data, st[0].ctypes.data, d0)
            for j in range(m):
                r1_1 = bo0[j]
                a = wl[j]
                v = r1_1
                wl[j] = (a + v)
            nb += 1
            used = max(used, m)
            if nb == 64:
                w = 1
                while w < used:
                    w *= 2
                while w > 1:
                    w //= 2
                    for l in range(min(w, used - w)):
                        a = wl[l]
                        v = wl[l + w]
                        wl[l] = (a + v)
                r = wl[0]
                for l in range(used):
                    wl[l] = K0
                c = nc
                lvl = 0
                while c & 1:
                    a = cs[lvl]
                    v = r
                    r = (a + v)
                    lvl += 1
                    c >>= 1
                cs[lvl] = r
                nc += 1
                nb = 0
                used = 0
        if used > 0:
            w = 1
            while w < used:
                w *= 2
            while w > 1:
                w //= 2
                for l in range(min(w, used - w)):
                    a = wl[l]
                    v = wl[l + w]
                    wl[l] = (a + v)
            r = wl[0]
            for l in range(used):
                wl[l] = K0
            c = nc
            lvl = 0
            while c & 1:
                a = cs[lvl]
                v = r
                r = (a + v)
                lvl += 1
                c >>= 1
            cs[lvl] = r
            nc += 1
            nb = 0
            used = 0
        r = K0
        lvl = 0
        while nc:
            if nc & 1:
                a = cs[lvl]
                v = r
                r = (a + v)
            lvl += 1
            nc >>= 1
        a = acc[i0, 0]
        v = r
        acc[i0, 0] = (a + v)
    return bad
