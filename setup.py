"""The installed name `odradek.*`: the top-level folders are its subpackages, mapped in
by setuptools' package_dir (pyproject.toml holds everything else)."""

from setuptools import find_packages, setup

# installed name under odradek. -> folder of this checkout
FOLDERS = {
    "broker": "broker",
    "coordinator": "coordinator",
    "protocol": "protocol",
    "storage": "storage",
    "spark": "odradek_spark",
}


def packages() -> list[str]:
    names = ["odradek"]
    for name, folder in FOLDERS.items():
        names.append(f"odradek.{name}")
        names += [f"odradek.{name}.{sub}" for sub in find_packages(where=folder)]
    return names


if __name__ == "__main__":  # as setuptools runs it
    package_dir = {"odradek": "odradek"}
    package_dir.update({f"odradek.{name}": folder for name, folder in FOLDERS.items()})
    setup(package_dir=package_dir, packages=packages())
