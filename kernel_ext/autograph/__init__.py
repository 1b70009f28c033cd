"""AutoGraph: rewrites Python ``if/while/for`` on traced values into graph control flow.

(The converter lands with the AutoGraph issue; until then functions are traced as written.)
"""
