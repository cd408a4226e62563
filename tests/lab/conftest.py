"""The `lab` marker: tests that run real (CPU, gloo) training jobs through torchrun."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "lab: runs a real PyTorch training job (needs torch; deselect with -m 'not lab')"
    )
