"""Map the design card's folders onto the ``webshepherd.*`` namespace.

``protocol/`` -> ``webshepherd.protocol``, ``daemon/`` -> ``webshepherd.daemon``,
``tui/`` -> ``webshepherd.tui``, ``integrations/`` -> ``webshepherd.integrations``;
sub-packages are found automatically so new folders need no edit here. Everything else
lives in ``pyproject.toml``.
"""

from setuptools import find_packages, setup

FOLDERS = {
    "webshepherd.protocol": "protocol",
    "webshepherd.daemon": "daemon",
    "webshepherd.tui": "tui",
    "webshepherd.integrations": "integrations",
}


def _packages() -> tuple[list[str], dict[str, str]]:
    packages: list[str] = []
    package_dir: dict[str, str] = {}
    for name, folder in FOLDERS.items():
        package_dir[name] = folder
        packages.append(name)
        for sub in find_packages(folder):
            packages.append(f"{name}.{sub}")
            package_dir[f"{name}.{sub}"] = f"{folder}/{sub.replace('.', '/')}"
    # data without Python: the tiny judge shipped with the package (daemon/dev/tiny_model.py)
    packages.append("webshepherd.daemon.dev.tiny_judge")
    package_dir["webshepherd.daemon.dev.tiny_judge"] = "daemon/dev/tiny_judge"
    return packages, package_dir


PACKAGES, PACKAGE_DIR = _packages()
setup(packages=PACKAGES, package_dir=PACKAGE_DIR)
