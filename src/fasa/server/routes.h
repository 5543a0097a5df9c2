// The HTTP API's endpoints, one row each (routes.cpp). Dispatch, the endpoint label of the
// request counters (fasa_requests_total), the request log and the HTTP server's reserved paths
// all read this table; a path written anywhere else is a bug.
//
// Adding an endpoint: a handler on ApiServer (server.h), a row here, and its tests under
// tests/server.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fasa/server/http.h"

namespace fasa::server {

class ApiServer;

// `who`: ApiServer::caller()'s answer (the API key's index, or kNoKeys); kNoKeys when the route
// does not need a key. Returns a note for the request's log line.
using RouteHandler = std::string (ApiServer::*)(const http::Request& req, http::ResponseWriter& w,
                                                int who);

struct Route {
  const char* method;  // "GET" or "POST"; a POST body must say it is JSON (else 415)
  const char* path;    // as the request names it; also the metrics' endpoint label. A path
                       // ending in "{id}" takes any non-empty rest (route_param)
  bool needs_key;      // refused (401) without one of the server's API keys, when it has keys
  bool reserved;       // answered on the reserved connections too (cheap, whatever the load)
  bool logged;         // gets a request-log line
  RouteHandler handler;
};

// Every row. The dispatch order is: unknown path 404, a CORS preflight (no key needed), missing
// key 401, wrong method 405, a POST body that is not JSON 415, then the handler.
const std::vector<Route>& api_routes();

// The row of `path`, or nullptr (404; the metrics label it "other"). OPTIONS on a row's path
// is a CORS preflight when the server allows some origin (cors.h), else a wrong method (405).
const Route* find_route(std::string_view path);

// What `path` holds in place of the row's "{id}" (not decoded); "" when the row has none or
// `path` does not match it.
constexpr std::string_view kParam = "{id}";
std::string_view route_param(const Route& r, std::string_view path);

// The rows' paths with `reserved`, in table order (http::ServerOptions::reserved_paths).
std::vector<std::string> reserved_route_paths();

}  // namespace fasa::server
