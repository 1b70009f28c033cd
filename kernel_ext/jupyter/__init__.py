"""The IPython extension: magics, widgets and the comm to the JupyterLab sidebar."""
