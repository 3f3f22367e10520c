"""HTML report templates (jinja2), shipped as package data; installed as ``gpuadvisor.reports``."""
