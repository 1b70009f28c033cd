def run(p0, p1, p2):
    v_x = p0
    v_w = p1
    v_b = p2
    v_matmul = v_x @ v_w
    del v_x, v_w
    v_add = v_matmul + v_b
    del v_matmul, v_b
    v_tanh = _tanh1(v_add)
    del v_add
    return v_tanh
