"""PSI/J plugin for pmix-tools: executor `pmix` (palloc/pwatch/prelease) and launcher `pspawn`."""
