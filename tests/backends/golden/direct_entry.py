def entry(p0=_MISS, p1=_MISS, p2=_MISS, *_more):
    if not _more and (p0.__class__ is _nd) and (p1.__class__ is _nd) and (p2.__class__ is _nd and p2.shape == _s2 and (p2.dtype is _d2 or p2.dtype == _d2)):
        if not (p0.base is None and p1.base is None and p2.base is None and p0 is not p1 and p0 is not p2):
            return _run(p0, p1, p2)
        a0 = p0
        a1 = p1
        a2 = p2[()]
        try:
            outs = _G(a0, a1, a2, _la1)
        except Exception:
            return _MISS
        v_sum = _t3(outs)
        v_for_out2 = a0
        _r = v_sum
        if _deferred:
            _flush()
        return _r
    return _MISS
