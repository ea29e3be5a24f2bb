"""nord: neural architecture search from a laptop to an MPI cluster."""
from setuptools import find_packages, setup

setup(
    name="nord",
    version="0.1.0",
    description="Neural architecture search research framework: descriptors, evaluators, MPI search",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="MIT",
    python_requires=">=3.10",
    packages=find_packages(include=["nord", "nord.*"]),
    package_data={"nord": ["benchmarks/nasbench201/data/*.csv.gz", "benchmarks/nasbench201/data/*.md",
                           "serve/static/*"]},
    # torch is installed first and pinned by scripts/setup.sh (an unpinned torch pulls
    # the CUDA build); the range here then installs nothing more.
    install_requires=["numpy>=1.21", "torch>=2.1", "scikit-learn>=1.0", "matplotlib>=3.5", "tqdm>=4.60"],
    extras_require={
        "mpi": ["mpi4py>=3.1"],
        "pygmo": ["pygmo>=2.19"],
        "optuna": ["optuna>=4.0", "cmaes>=0.10"],   # cmaes: Optuna's CMA-ES sampler
        # nord serve: the web server, and plotly for its plotly.min.js (served locally, no CDN)
        "serve": ["starlette>=0.37", "uvicorn>=0.29", "plotly>=5"],
        "all": ["mpi4py>=3.1", "pygmo>=2.19", "optuna>=4.0", "cmaes>=0.10",
                "starlette>=0.37", "uvicorn>=0.29", "plotly>=5"],
        # selenium drives Debian's chromium-driver in the view's browser tests
        "test": ["pytest>=7", "hypothesis>=6", "pytest-timeout>=2", "pytest-xdist>=3.5", "networkx>=2.6",
                 "selenium>=4.10"],
    },
    # Plug-ins: a registry that misses a name loads its group once (nord/registry.py), so the
    # generic catalogues find the benchmark without naming it. Other packages add theirs to
    # nord.spaces, nord.algorithms, nord.schedulers, nord.callbacks or nord.datasets.
    entry_points={
        "console_scripts": ["nord=nord.app.cli:main"],
        "nord.spaces": ["nasbench201=nord.benchmarks.nasbench201.space:NASBench201Space"],
    },
)
