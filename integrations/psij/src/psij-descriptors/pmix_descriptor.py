from packaging.version import Version
from psij.descriptor import Descriptor

__PSI_J_EXECUTORS__ = [Descriptor(name='pmix', nice_name='pmix-tools (PMIx DVM)',
                                  version=Version('0.1.0'),
                                  cls='psij_pmix.executor.PmixJobExecutor')]

__PSI_J_LAUNCHERS__ = [Descriptor(name='pspawn', version=Version('0.1.0'),
                                  cls='psij_pmix.launcher.PspawnLauncher')]
