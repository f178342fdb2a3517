"""pip-installable PSI/J plugin: executor `pmix` and launcher `pspawn` for pmix-tools."""
from setuptools import setup

setup(
    name='psij-pmix',
    version='0.1.0',
    description='PSI/J executor `pmix` and launcher `pspawn` driving the pmix-tools binaries',
    packages=['psij_pmix', 'psij-descriptors'],
    package_dir={'': 'src'},
    package_data={'psij_pmix': ['*.mustache', '*.sh']},
    install_requires=['psij-python>=0.9.11'],
    python_requires='>=3.8',
)
