// Iceberg's REST catalog test fixture (org.apache.iceberg.rest.RESTCatalogServer, iceberg-open-api test-fixtures)
// served on 127.0.0.1 only: the fixture's own main binds every interface.
//
// 1. The backend catalog is the fixture's own: RESTCatalogServer.initializeBackendCatalog() reads the CATALOG_*
//    environment (CATALOG_WAREHOUSE -> warehouse, CATALOG_IO__IMPL -> io-impl, ...) over a JdbcCatalog on SQLite.
// 2. Its RESTServerCatalogAdapter behind Iceberg's RESTCatalogServlet, gzip on, as the fixture's start() wires them.
// 3. A Jetty server bound to 127.0.0.1:<CATALOG_REST_PORT>, run until the process is stopped.
//
// Run as a single-file source program: java -cp <fixture classpath> LoopbackRESTCatalogServer.java
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import org.apache.iceberg.rest.RESTCatalogAdapter;
import org.apache.iceberg.rest.RESTCatalogServer;
import org.apache.iceberg.rest.RESTCatalogServlet;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.handler.gzip.GzipHandler;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

public class LoopbackRESTCatalogServer {
  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(System.getenv("CATALOG_REST_PORT"));
    Constructor<RESTCatalogServer> fixture = RESTCatalogServer.class.getDeclaredConstructor();
    fixture.setAccessible(true);
    Method backend = RESTCatalogServer.class.getDeclaredMethod("initializeBackendCatalog");
    backend.setAccessible(true);
    Object context = backend.invoke(fixture.newInstance());
    Class<?> adapterClass = Class.forName("org.apache.iceberg.rest.RESTServerCatalogAdapter");
    Constructor<?> adapterConstructor = adapterClass.getDeclaredConstructor(context.getClass());
    adapterConstructor.setAccessible(true);
    RESTCatalogAdapter adapter = (RESTCatalogAdapter) adapterConstructor.newInstance(context);
    ServletContextHandler handler = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    handler.addServlet(new ServletHolder(new RESTCatalogServlet(adapter)), "/*");
    handler.insertHandler(new GzipHandler());
    Server server = new Server(new InetSocketAddress("127.0.0.1", port));
    server.setHandler(handler);
    server.start();
    System.out.println("REST catalog fixture listening on 127.0.0.1:" + port);
    server.join();
  }
}
