#include "server/http/http_server.h"

#include <httplib.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <sys/socket.h>

#include <atomic>
#include <charconv>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "model/core/logging.h"
#include "server/http/bounded_task_queue.h"
#include "server/http/deepl_api.h"
#include "server/http/native_api.h"
#include "server/http/web_assets.h"
#include "server/latency_buckets.h"

namespace transerve::http {
namespace {

// The request as the APIs take it: query and form fields together, multipart fields as text.
HttpInput InputOf(const httplib::Request& req) {
  HttpInput in;
  in.method = req.method;
  in.path = req.path;
  in.content_type = req.get_header_value("Content-Type");
  in.body = req.body;
  in.params.insert(req.params.begin(), req.params.end());
  for (const auto& [name, field] : req.files) {
    if (field.filename.empty()) in.params.emplace(name, field.content);
  }
  in.authorization = req.get_header_value("Authorization");
  const std::string timeout = req.get_header_value("X-Request-Timeout-Ms");
  long ms = 0;
  const auto [end, ec] = std::from_chars(timeout.data(), timeout.data() + timeout.size(), ms);
  if (ec == std::errc() && end == timeout.data() + timeout.size() && ms > 0) in.timeout_ms = ms;
  return in;
}

// The same, for a handler that reads the body itself: the body, a urlencoded form's fields and
// a multipart form's text fields, as httplib would have parsed them. nullopt when the body
// cannot be read (over the limit, cut off): httplib has then set the status (413, 400).
std::optional<HttpInput> InputWithBody(const httplib::Request& req,
                                       const httplib::ContentReader& reader) {
  HttpInput in = InputOf(req);
  if (req.is_multipart_form_data()) {
    std::vector<httplib::MultipartFormData> items;
    const bool read = reader(
        [&](const httplib::MultipartFormData& item) {
          items.push_back(item);
          return true;
        },
        [&](const char* data, size_t n) {
          items.back().content.append(data, n);
          return true;
        });
    if (!read) return std::nullopt;
    for (const auto& item : items) {
      if (item.filename.empty()) in.params.emplace(item.name, item.content);
    }
    return in;
  }
  const bool read = reader([&](const char* data, size_t n) {
    in.body.append(data, n);
    return true;
  });
  if (!read) return std::nullopt;
  if (absl::StartsWithIgnoreCase(in.content_type, "application/x-www-form-urlencoded")) {
    httplib::Params fields;
    httplib::detail::parse_query_text(in.body, fields);
    in.params.insert(fields.begin(), fields.end());
  }
  return in;
}

void Write(const HttpReply& reply, httplib::Response& res) {
  res.status = reply.status;
  res.set_content(reply.body, reply.content_type);
}

}  // namespace

struct HttpFrontEnd::Routes {
  std::unique_ptr<httplib::Server> server;
  prometheus::Family<prometheus::Counter>* requests = nullptr;
  prometheus::Family<prometheus::Histogram>* duration = nullptr;
  std::atomic<bool> stopped{false};
  // Set when the drain begins: new requests are answered 503 (health still answers).
  std::atomic<bool> draining{false};
  std::atomic<int> listening_fd{-1};
  // Requests being answered, streams until their last event: the drain waits for them before
  // gRPC's shutdown closes the in-process channel under them.
  absl::Mutex in_flight_mu;
  int in_flight ABSL_GUARDED_BY(in_flight_mu) = 0;

  void Begins() {
    absl::MutexLock lock(&in_flight_mu);
    ++in_flight;
  }
  void Ends() {
    absl::MutexLock lock(&in_flight_mu);
    --in_flight;
  }
  bool AwaitIdle(absl::Time deadline) {
    absl::MutexLock lock(&in_flight_mu);
    auto none = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(in_flight_mu) { return in_flight == 0; };
    return in_flight_mu.AwaitWithDeadline(absl::Condition(&none), deadline);
  }
  // The answer to a request that came once the drain began, in its API's shape.
  static HttpReply Draining(const char* api) {
    constexpr char kWhy[] = "the server is shutting down: retry on another replica";
    if (std::string_view(api) == "libretranslate") return LtErrorReply(503, kWhy);
    if (std::string_view(api) == "deepl") return DeeplErrorReply(503, kWhy);
    return ErrorReply(grpc::Status(grpc::StatusCode::UNAVAILABLE, kWhy));
  }
  // Each route's path and the methods it answers: a known path asked with another method is a
  // 405 naming them, not a 404 (httplib routes by method and path together).
  std::map<std::string, std::string> methods_of_path;

  void AddMethods(const char* method, const std::string& path) {
    std::string& methods = methods_of_path[path];
    methods = methods.empty() ? method : absl::StrCat(methods, ", ", method);
  }
  // `handler` for method `m`: a Handler, or for a method with a body one that reads it itself
  // (httplib has no GET with a content reader).
  template <typename H>
  void Register(std::string_view m, const std::string& path, H handler) {
    if (m == "POST") {
      server->Post(path, std::move(handler));
    } else if (m == "PUT") {
      server->Put(path, std::move(handler));
    } else if (m == "PATCH") {
      server->Patch(path, std::move(handler));
    } else if (m == "DELETE") {
      server->Delete(path, std::move(handler));
    } else if constexpr (std::is_same_v<H, httplib::Server::Handler>) {
      server->Get(path, std::move(handler));
    }
  }
  void Route(const char* method, const std::string& path, httplib::Server::Handler handler) {
    AddMethods(method, path);
    Register(method, path, std::move(handler));
  }

  void Record(const char* api, const char* route, int status, absl::Time start) {
    requests->Add({{"api", api}, {"route", route}, {"code", std::to_string(status)}}).Increment();
    duration->Add({{"api", api}, {"route", route}}, SecondsBuckets())
        .Observe(absl::ToDoubleSeconds(absl::Now() - start));
  }

  // A route answered by one function of the request.
  struct UnaryRoute {
    std::function<void(const HttpInput&, httplib::Response&)> answer;
  };
  template <typename Fn>
  UnaryRoute Unary(const char* api, const char* route, Fn fn) {
    return {[this, api, route, fn](const HttpInput& in, httplib::Response& res) {
      const absl::Time start = absl::Now();
      Begins();
      const bool refused = draining.load() && std::string_view(api) != "health";
      Write(refused ? Draining(api) : fn(in), res);
      Record(api, route, res.status, start);
      Ends();
    }};
  }
  // GET reads the query; the other methods read their body through httplib's content reader,
  // because httplib's own reading refuses a urlencoded form over 8 KB with 413 (its
  // CPPHTTPLIB_REQUEST_URI_MAX_LENGTH), where a form may be as large as any body: a DeepL
  // glossary's entries, a LibreTranslate text.
  void Route(const char* method, const std::string& path, UnaryRoute unary) {
    if (std::string_view(method) == "GET") {
      Route(method, path, [unary](const httplib::Request& req, httplib::Response& res) {
        unary.answer(InputOf(req), res);
      });
      return;
    }
    AddMethods(method, path);
    Register(method, path,
             httplib::Server::HandlerWithContentReader(
                 [unary](const httplib::Request& req, httplib::Response& res,
                         const httplib::ContentReader& reader) {
                   // An unreadable body is answered by httplib's status and the error handler.
                   if (auto in = InputWithBody(req, reader)) unary.answer(*in, res);
                 }));
  }

  // The page's files (GET / and /static/NAME). The page makes no request outside this server,
  // and its policy says so to the browser.
  httplib::Server::Handler Page() {
    return [this](const httplib::Request& req, httplib::Response& res) {
      const absl::Time start = absl::Now();
      if (const WebAsset* asset = FindWebAsset(req.path)) {
        res.set_content(std::string(asset->body), std::string(asset->content_type));
        res.set_header("Content-Security-Policy", "default-src 'self'");
        res.set_header("X-Content-Type-Options", "nosniff");
      } else {
        Write(ErrorReply(grpc::Status(grpc::StatusCode::NOT_FOUND,
                                      absl::StrCat("no such file: ", req.path.substr(0, 200)))),
              res);
      }
      Record("page", req.path == "/" ? "/" : "/static", res.status, start);
    };
  }

  // POST /v1/translate/stream: the first event (or the error instead) is awaited here, on the
  // worker; the rest is written by the chunked provider as the messages come.
  httplib::Server::Handler Stream(TranslatorBackend* backend, int char_limit) {
    return [this, backend, char_limit](const httplib::Request& req, httplib::Response& res) {
      const absl::Time start = absl::Now();
      Begins();
      if (draining.load()) {
        Write(Draining("v1"), res);
        Record("v1", "/v1/translate/stream", res.status, start);
        Ends();
        return;
      }
      StreamStart opened = OpenV1Stream(InputOf(req), *backend, char_limit);
      if (opened.error.has_value()) {
        Write(*opened.error, res);
        Record("v1", "/v1/translate/stream", res.status, start);
        Ends();
        return;
      }
      res.status = 200;
      res.set_header("Cache-Control", "no-cache");
      res.set_header("X-Accel-Buffering", "no");  // nginx: pass events on as they come
      auto stream = std::shared_ptr<TranslatorBackend::Stream>(std::move(opened.stream));
      auto first = std::make_shared<std::string>(std::move(opened.first));
      res.set_chunked_content_provider(
          "text/event-stream",
          [stream, first](size_t, httplib::DataSink& sink) {
            if (!sink.write(first->data(), first->size())) {
              if (stream) stream->Cancel();
              return false;
            }
            if (!stream) {  // the first event was already the end
              sink.done();
              return true;
            }
            v1::TranslateStreamResponse message;
            while (stream->Next(&message)) {
              const std::string event = SseMessage(message);
              if (!sink.write(event.data(), event.size())) {
                stream->Cancel();  // the client went away: stop the work
                stream->Finish();
                return false;
              }
            }
            const grpc::Status s = stream->Finish();
            const std::string last = s.ok() ? SseDone() : SseError(s);
            sink.write(last.data(), last.size());
            sink.done();
            return true;
          },
          // httplib calls this once, when the answer ends or its connection goes.
          [this, start](bool) {
            Record("v1", "/v1/translate/stream", 200, start);
            Ends();
          });
    };
  }
};

absl::StatusOr<std::unique_ptr<HttpFrontEnd>> HttpFrontEnd::Start(
    const HttpOptions& options, std::unique_ptr<TranslatorBackend> backend,
    prometheus::Registry& registry) {
  std::unique_ptr<HttpFrontEnd> front(new HttpFrontEnd());
  front->backend_ = std::move(backend);
  front->deepl_ = std::make_unique<DeeplApi>(*front->backend_);
  front->routes_ = std::make_unique<Routes>();
  Routes& routes = *front->routes_;
  const bool tls = !options.tls_cert_file.empty() && !options.tls_key_file.empty();
  if (tls) {
    auto ssl = std::make_unique<httplib::SSLServer>(
        options.tls_cert_file.c_str(), options.tls_key_file.c_str(),
        options.tls_client_ca_file.empty() ? nullptr : options.tls_client_ca_file.c_str());
    if (!ssl->is_valid()) {
      return absl::UnavailableError("HTTP: cannot use the TLS certificate and key files");
    }
    routes.server = std::move(ssl);
  } else {
    routes.server = std::make_unique<httplib::Server>();
  }
  routes.requests = &prometheus::BuildCounter()
                         .Name("transerve_http_requests_total")
                         .Help("HTTP requests answered, by API, route and HTTP status")
                         .Register(registry);
  routes.duration = &prometheus::BuildHistogram()
                         .Name("transerve_http_request_duration_seconds")
                         .Help("Time from an HTTP request's arrival to its answer's end")
                         .Register(registry);

  httplib::Server& svr = *routes.server;
  const int threads = options.threads;
  const int pending = options.pending_connections;
  svr.new_task_queue = [threads, pending] { return new BoundedTaskQueue(threads, pending); };
  svr.set_payload_max_length(options.max_body_bytes);
  svr.set_read_timeout(std::chrono::milliseconds(options.io_timeout_ms));
  svr.set_write_timeout(std::chrono::milliseconds(options.io_timeout_ms));
  svr.set_keep_alive_timeout(options.keep_alive_timeout_s);
  svr.set_keep_alive_max_count(options.keep_alive_max_requests);
  svr.set_tcp_nodelay(true);
  // httplib listens with a backlog of 5: a burst of connections overflows it and, with SYN
  // cookies, some are reset before the server reads them (requests lost, no answer). The
  // listening socket is noted here so that its backlog can be raised once bound.
  std::atomic<int>* listening = &routes.listening_fd;
  // httplib's default options add SO_REUSEPORT, with which a second server binds the same
  // port and the kernel splits the connections between the two: a port in use must be an
  // error at start-up instead. SO_REUSEADDR alone still lets a restart bind over TIME_WAIT.
  svr.set_socket_options([listening](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listening->store(sock);
  });

  TranslatorBackend* b = front->backend_.get();
  routes.Route("POST", "/v1/translate",
               routes.Unary("v1", "/v1/translate",
                            [b, limit = options.libretranslate.char_limit](const HttpInput& in) {
                              return V1Translate(in, *b, limit);
                            }));
  routes.Route("POST", "/v1/translate/stream", routes.Stream(b, options.libretranslate.char_limit));
  routes.Route("GET", "/v1/models", routes.Unary("v1", "/v1/models", [b](const HttpInput& in) {
    return V1Models(in, *b);
  }));
  // Cross-origin calls (browser extensions, web apps on other hosts), as LibreTranslate allows
  // them: every answer says so, and a preflight OPTIONS is answered for every path. Keys are
  // bearer tokens, never cookies, so no credentials ride along.
  svr.set_default_headers(
      {{"Access-Control-Allow-Origin", "*"},
       {"Access-Control-Allow-Headers", "Authorization, Content-Type, X-Request-Timeout-Ms"},
       {"Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE"},
       {"Access-Control-Max-Age", "86400"}});
  svr.Options(R"(/.*)", [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
  routes.Route("GET", "/", routes.Page());
  routes.Route("GET", R"(/static/[^/]+)", routes.Page());
  routes.Route("GET", "/healthz",
               routes.Unary("health", "/healthz", [](const HttpInput&) { return Healthz(); }));
  routes.Route("GET", "/readyz",
               routes.Unary("health", "/readyz", [b](const HttpInput&) { return Readyz(*b); }));
  const LtSettings lt = options.libretranslate;
  routes.Route("POST", "/translate",
               routes.Unary("libretranslate", "/translate",
                            [b, lt](const HttpInput& in) { return LtTranslate(in, *b, lt); }));
  routes.Route("POST", "/detect",
               routes.Unary("libretranslate", "/detect",
                            [b](const HttpInput& in) { return LtDetect(in, *b); }));
  routes.Route("GET", "/languages",
               routes.Unary("libretranslate", "/languages",
                            [b](const HttpInput& in) { return LtLanguages(in, *b); }));
  routes.Route("GET", "/frontend/settings",
               routes.Unary("libretranslate", "/frontend/settings", [b, lt](const HttpInput& in) {
                 return LtFrontendSettings(in, *b, lt);
               }));

  // DeepL's API: its routes answer GET and POST alike where DeepL's do.
  DeeplApi* deepl = front->deepl_.get();
  for (const char* method : {"GET", "POST"}) {
    routes.Route(method, "/v2/languages",
                 routes.Unary("deepl", "/v2/languages",
                              [deepl](const HttpInput& in) { return deepl->Languages(in); }));
    routes.Route(method, "/v2/usage",
                 routes.Unary("deepl", "/v2/usage",
                              [deepl](const HttpInput& in) { return deepl->Usage(in); }));
  }
  routes.Route("POST", "/v2/translate",
               routes.Unary("deepl", "/v2/translate",
                            [deepl](const HttpInput& in) { return deepl->Translate(in); }));
  routes.Route("GET", "/v2/glossary-language-pairs",
               routes.Unary("deepl", "/v2/glossary-language-pairs", [deepl](const HttpInput& in) {
                 return deepl->GlossaryLanguagePairs(in);
               }));
  const auto glossaries = [deepl](const HttpInput& in) { return deepl->Glossaries(in); };
  for (const char* version : {"v2", "v3"}) {
    const std::string base = absl::StrCat("/", version, "/glossaries");
    const char* route = std::string_view(version) == "v2" ? "/v2/glossaries" : "/v3/glossaries";
    for (const char* method : {"GET", "POST"}) {
      routes.Route(method, base, routes.Unary("deepl", route, glossaries));
    }
    for (const char* method : {"GET", "DELETE", "PATCH"}) {
      routes.Route(method, base + "/[^/]+", routes.Unary("deepl", route, glossaries));
    }
    routes.Route("GET", base + "/[^/]+/entries", routes.Unary("deepl", route, glossaries));
    for (const char* method : {"PUT", "DELETE"}) {
      routes.Route(method, base + "/[^/]+/dictionaries", routes.Unary("deepl", route, glossaries));
    }
  }
  routes.Route("POST", "/deeplx/translate",
               routes.Unary("deepl", "/deeplx/translate",
                            [deepl](const HttpInput& in) { return deepl->DeeplxTranslate(in); }));

  // httplib's own answers (no route, a body over the limit, a request it cannot parse) get a
  // JSON body saying why, like every other error.
  svr.set_error_handler([&routes](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    // LibreTranslate's routes answer in its shape: {"error": "..."}.
    const bool libretranslate = req.path == "/translate" || req.path == "/detect" ||
                                req.path == "/languages" || req.path == "/frontend/settings";
    // DeepL's in its shape: {"message": "..."}.
    const bool deepl = IsDeeplPath(req.path);
    std::string why;
    grpc::StatusCode code = grpc::StatusCode::INVALID_ARGUMENT;
    if (res.status == 404) {
      if (auto known = routes.methods_of_path.find(req.path);
          known != routes.methods_of_path.end()) {
        res.set_header("Allow", known->second);
        res.status = 405;
        code = grpc::StatusCode::UNIMPLEMENTED;
        why =
            absl::StrCat(req.path, " answers ", known->second, ", not ", req.method.substr(0, 20));
      } else {
        code = grpc::StatusCode::NOT_FOUND;
        why =
            absl::StrCat("no such route: ", req.method.substr(0, 20), " ", req.path.substr(0, 200));
      }
    } else if (res.status == 413) {
      code = grpc::StatusCode::RESOURCE_EXHAUSTED;
      why = "the request body is over the server's limit";
    } else if (res.status == 400) {
      why =
          "the request cannot be read as HTTP/1.1: malformed, or a POST without a "
          "Content-Length";
    } else {
      why = absl::StrCat("HTTP ", res.status);
    }
    const int status = res.status;
    Write(libretranslate ? LtErrorReply(status, why)
          : deepl        ? DeeplErrorReply(status, why)
                         : ErrorReply(grpc::Status(code, why)),
          res);
    res.status = status;
  });
  svr.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        Log().error("HTTP {} {}: internal error: {}", req.method, req.path.substr(0, 200), what);
        Write(ErrorReply(grpc::Status(grpc::StatusCode::INTERNAL, "internal error")), res);
      });

  if (options.port == 0) {
    front->port_ = svr.bind_to_any_port(options.host);
  } else if (svr.bind_to_port(options.host, options.port)) {
    front->port_ = options.port;
  }
  if (front->port_ <= 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen for HTTP on ", options.host, ":", options.port));
  }
  // Listening again on a listening socket sets its backlog (Linux); the kernel caps it at
  // net.core.somaxconn.
  if (listening->load() < 0 || ::listen(listening->load(), SOMAXCONN) != 0) {
    Log().warn("HTTP: cannot raise the listen backlog; bursts of connections may be refused");
  }
  front->listener_ = std::thread([&svr] { svr.listen_after_bind(); });
  return front;
}

void HttpFrontEnd::StopAccepting() {
  if (routes_ == nullptr || routes_->draining.exchange(true)) return;
  // Shut down, the listening socket fails httplib's accept(): its loop ends and closes the
  // socket, while the connections being served go on (httplib's stop() would cut streams
  // mid-way). Without the socket, stop() does it.
  const int fd = routes_->listening_fd.load();
  if (fd < 0 || ::shutdown(fd, SHUT_RDWR) != 0) routes_->server->stop();
}

bool HttpFrontEnd::AwaitIdle(absl::Time deadline) {
  return routes_ == nullptr || routes_->AwaitIdle(deadline);
}

void HttpFrontEnd::Stop() {
  if (routes_ == nullptr || routes_->stopped.exchange(true)) return;
  StopAccepting();
  // The listen loop returns once its workers have: idle keep-alive connections close within
  // their timeout, the others answer 503 from now on.
  if (listener_.joinable()) listener_.join();
}

HttpFrontEnd::~HttpFrontEnd() { Stop(); }

}  // namespace transerve::http
