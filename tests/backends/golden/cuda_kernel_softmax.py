# kernel_ext generated kernel (codegen v3, target cuda)
# segment: subtract+exp
# inputs: float64/2, float64/2
# outputs: float64/2
import math
import numpy as np
from kernel_ext.backends.numba_cuda import device as _device, kernel as _kernel
from kernel_ext.backends.numba_cuda import wrapping_add as _wadd, wrapping_sub as _wsub, wrapping_mul as _wmul

K0 = np.float64(1.0)
K1 = np.float64(0.0)

@_device
def _dexp_float64(x):
    if x != x:
        return x
    if x > 709.782712893384:
        return np.float64(np.inf)
    if x < -745.1332191019412:
        return np.float64(0)
    return np.float64(math.exp(x))


from numba import cuda

@_kernel
def k_cuda(total, n0, n1, in0, in1, out0, flag):
    bad = False
    start = cuda.grid(1)
    step = cuda.gridsize(1)
    for flat in range(start, total, step):
        rest = flat
        i1 = rest % n1
        rest = rest // n1
        i0 = rest % n0
        rest = rest // n0
        x0 = in0[min(i0, in0.shape[0] - 1), min(i1, in0.shape[1] - 1)]
        x1 = in1[min(i0, in1.shape[0] - 1), min(i1, in1.shape[1] - 1)]
        t0 = np.float64((x0 - x1))
        t1 = np.float64(_dexp_float64(t0))
        out0[i0, i1] = t1
    if bad:
        flag[0] = 1
