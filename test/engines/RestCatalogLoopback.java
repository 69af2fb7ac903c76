package org.apache.iceberg.rest;

import java.lang.reflect.Method;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/**
 * Iceberg's RESTCatalogServer (the test fixture of iceberg-open-api that the apache/iceberg-rest-fixture
 * image runs) on the loopback only: its backend catalog (from the CATALOG_* environment, as in the
 * image), its RESTServerCatalogAdapter and RESTCatalogServlet, served by Jetty bound to 127.0.0.1 at
 * the port given as the first argument. RESTCatalogServer.start binds every interface; this is its
 * start without that.
 */
public final class RestCatalogLoopback {
  public static void main(String[] args) throws Exception {
    RESTCatalogServer fixture = new RESTCatalogServer();
    Method backend = RESTCatalogServer.class.getDeclaredMethod("initializeBackendCatalog");
    backend.setAccessible(true);
    RESTCatalogServer.CatalogContext catalog = (RESTCatalogServer.CatalogContext) backend.invoke(fixture);
    ServletContextHandler handler = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    handler.addServlet(new ServletHolder(new RESTCatalogServlet(new RESTServerCatalogAdapter(catalog))), "/*");
    Server http = new Server();
    ServerConnector connector = new ServerConnector(http);
    connector.setHost("127.0.0.1");
    connector.setPort(Integer.parseInt(args[0]));
    http.addConnector(connector);
    http.setHandler(handler);
    http.start();
    System.out.println("sluice: REST catalog listening on 127.0.0.1:" + connector.getLocalPort());
    http.join();
  }
}
