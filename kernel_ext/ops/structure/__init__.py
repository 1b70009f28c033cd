"""Sources, state, control flow and opaque calls: placeholders, constants, variables, prints,
random draws, checks, cond, while, get_output and numpy_call.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`)."""
