"""The provider's Airflow plugin: pages and APIs the Airflow API server serves for this provider.

One FastAPI app (``plugins/app.py``) is mounted by the API server under ``URL_PREFIX`` (``/iceberg``); each topic is
an ``APIRouter`` in its own module of this package, listed in ``app.ROUTER_MODULES``. The plugin class
(``plugins/iceberg_plugin.py``) is registered in the provider info, so ``airflow plugins`` and ``airflow providers
list`` show it wherever the package is installed; no file goes into the plugins folder.

To add a router: write ``plugins/<topic>.py`` with a module-level ``router = APIRouter(prefix="/<topic>")`` whose
routes check access with Airflow's own dependencies (``airflow.api_fastapi.core_api.security``), add the module's
name to ``app.ROUTER_MODULES``, and test it through ``create_app()`` (see ``tests/airflow_iceberg_provider/plugins``).
"""
