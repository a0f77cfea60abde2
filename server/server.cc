#include "server/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "model/core/logging.h"
#include "server/auth.h"
#include "server/metrics.h"
#include "transerve/internal/lenient_request.pb.h"
#include "transerve/v1/translator.grpc.pb.h"

namespace transerve {
namespace {

constexpr char kServiceName[] = "transerve.v1.Translator";

// The one place absl statuses become gRPC statuses (the codes are numerically the same).
grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

std::string CodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

absl::Time DeadlineOf(const grpc::CallbackServerContext* ctx) {
  const auto tp = ctx->deadline();
  if (tp == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(tp);
}

// The client gives up at its own deadline and cancels the call; that cancellation can reach us
// before our copy of the deadline (the client's timeout counted from when the call arrived,
// so later by the transit time) has passed. A cancellation this close to the deadline is the
// deadline, and is answered and counted as such.
constexpr absl::Duration kDeadlineTransitSlack = absl::Milliseconds(250);

absl::Status SentenceError(const absl::Status& s, absl::Time deadline) {
  if (s.code() == absl::StatusCode::kCancelled && absl::Now() + kDeadlineTransitSlack >= deadline) {
    return absl::DeadlineExceededError("the request's deadline passed while it was translated");
  }
  return s;
}

struct ServedModel {
  std::string name;
  std::string dir;
  std::unique_ptr<Translator> translator;
  std::unique_ptr<Scheduler> scheduler;
  ServerMetrics::ModelMetrics* metrics = nullptr;
  v1::ModelInfo info;
};

// Fills one Translation from a search result.
void FillTranslation(const Translator& t, const std::vector<int32_t>& source_ids,
                     const SearchResult& r, bool scores, int num_hypotheses, v1::Translation* out,
                     int64_t* generated_tokens) {
  if (r.hypotheses.empty()) return;
  auto fill = [&](const Hypothesis& h, auto* msg) {
    msg->set_text(t.Detokenize(h.ids));
    if (scores) {
      msg->set_score(h.score);
      for (int32_t id : h.ids) {
        msg->add_token_ids(id);
        msg->add_tokens(std::string(t.tokenizer().TargetIdToPiece(id)));
      }
    }
  };
  const Hypothesis& best = r.hypotheses[0];
  fill(best, out);
  out->set_source_token_count(static_cast<int32_t>(source_ids.size()));
  out->set_target_token_count(static_cast<int32_t>(best.ids.size()));
  *generated_tokens += static_cast<int64_t>(best.ids.size());
  if (!best.alignment.empty()) {
    v1::Alignment* a = out->mutable_alignment();
    a->set_target_length(static_cast<int32_t>(best.ids.size()));
    a->set_source_length(static_cast<int32_t>(best.alignment.size() / best.ids.size()));
    a->mutable_weights()->Add(best.alignment.begin(), best.alignment.end());
    for (int32_t id : source_ids) {
      a->add_source_tokens(std::string(t.tokenizer().SourceIdToPiece(id)));
    }
    for (int32_t id : best.ids) {
      a->add_target_tokens(std::string(t.tokenizer().TargetIdToPiece(id)));
    }
  }
  if (num_hypotheses > 1) {
    const size_t n = std::min<size_t>(num_hypotheses, r.hypotheses.size());
    for (size_t i = 0; i < n; ++i) fill(r.hypotheses[i], out->add_hypotheses());
  }
}

}  // namespace

// State shared by the service and the server wrapper.
struct TranserveServer::Impl {
  ServerConfig config;
  ServerMetrics metrics;
  std::vector<std::unique_ptr<ServedModel>> models;  // filled once, before `ready`
  std::atomic<bool> ready{false};
  std::atomic<bool> draining{false};
  absl::Mutex drain_mu;
  bool drain_started ABSL_GUARDED_BY(drain_mu) = false;
  absl::Status drain_result ABSL_GUARDED_BY(drain_mu);  // once the drain is over
  // Health is SERVING once the models are loaded, until a drain starts or a model's device is
  // lost: then NOT_SERVING for good, so that probes move traffic away or restart the process.
  absl::Mutex health_mu;
  bool device_lost ABSL_GUARDED_BY(health_mu) = false;
  absl::Mutex mu;
  int in_flight ABSL_GUARDED_BY(mu) = 0;
  std::unique_ptr<grpc::Service> service;  // declared first: outlives the server
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  int metrics_port = -1;
  std::thread stats_thread;
  std::atomic<bool> stop_stats{false};

  void Enter() {
    absl::MutexLock lock(&mu);
    ++in_flight;
  }
  void Leave() {
    absl::MutexLock lock(&mu);
    --in_flight;
  }
  // UNAUTHENTICATED unless the call carries one of the configured bearer tokens (if any).
  absl::Status Authenticate(const grpc::CallbackServerContext* ctx) const {
    if (config.auth_tokens.empty()) return absl::OkStatus();
    const auto& md = ctx->client_metadata();
    const auto it = md.find("authorization");
    const std::string_view presented = it == md.end()
                                           ? std::string_view()
                                           : std::string_view(it->second.data(), it->second.size());
    if (!BearerTokenAccepted(presented, config.auth_tokens)) {
      return absl::UnauthenticatedError("missing or wrong bearer token (authorization metadata)");
    }
    return absl::OkStatus();
  }
  // The model a request names; UNAVAILABLE while loading. A call that reaches us while draining
  // is served: gRPC accepted it before its shutdown closed the door, and refusing it now would
  // fail it where a balancer cannot retry (the scheduler refuses once it is shut down).
  absl::StatusOr<ServedModel*> Resolve(const std::string& name) {
    if (!ready.load()) return absl::UnavailableError("the server is still loading its models");
    if (name.empty()) return models.front().get();
    for (auto& m : models) {
      if (m->name == name) return m.get();
    }
    std::vector<std::string> names;
    for (auto& m : models) names.push_back(m->name);
    // The name is the caller's: escaped and cut, so an error never carries a megabyte back.
    constexpr size_t kShown = 64;
    const std::string shown =
        absl::StrCat(absl::CHexEscape(name.substr(0, kShown)), name.size() > kShown ? "..." : "");
    return absl::NotFoundError(absl::StrCat("unknown model '", shown,
                                            "'; this server serves: ", absl::StrJoin(names, ", ")));
  }
  // An admitted request, kept by its reactor for as long as the call runs.
  struct Admission {
    ServedModel* model = nullptr;
    PreparedRequest prepared;  // options, tokenized texts (token counts, alignments), ...
    absl::Time deadline = absl::InfiniteFuture();
  };
  // What a translation call must pass before anything is queued: token, model, request limits
  // (tokenizing on this gRPC thread), deadline. `model_name` is set as soon as the model is
  // known, so a rejected request is still counted under it.
  absl::StatusOr<Admission> Admit(const grpc::CallbackServerContext* ctx,
                                  const v1::TranslateRequest& request, std::string* model_name) {
    if (auto s = Authenticate(ctx); !s.ok()) return s;
    auto model = Resolve(request.model());
    if (!model.ok()) return model.status();
    *model_name = (*model)->name;
    auto prepared = PrepareRequest(request, *(*model)->translator, config.limits);
    if (!prepared.ok()) return prepared.status();
    const absl::Time deadline = DeadlineOf(ctx);
    if (deadline <= absl::Now()) return absl::DeadlineExceededError("deadline already passed");
    return Admission{*model, *std::move(prepared), deadline};
  }
  void Record(const char* method, grpc::StatusCode code, const std::string& model, absl::Time start,
              int texts) {
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    const std::string code_name = CodeName(code);
    metrics.RecordRequest(method, code_name, model, seconds);
    Log().debug("rpc method={} model={} texts={} code={} seconds={:.6f}", method, model, texts,
                code_name, seconds);
  }
  void UpdateHealth() {
    absl::MutexLock lock(&health_mu);
    const bool serving = ready.load() && !draining.load() && !device_lost;
    auto* health = server->GetHealthCheckService();
    health->SetServingStatus("", serving);
    health->SetServingStatus(kServiceName, serving);
  }
  void RefreshGauges() {
    if (!ready.load()) return;
    for (auto& m : models) {
      m->metrics->SetStats(m->scheduler->stats());
      if (const absl::Status failure = m->scheduler->failure(); !failure.ok()) {
        bool first = false;
        {
          absl::MutexLock lock(&health_mu);
          first = !device_lost;
          device_lost = true;
        }
        if (first) {
          Log().error("model '{}' can translate nothing more ({}): health is NOT_SERVING", m->name,
                      std::string(failure.message()));
          UpdateHealth();
          if (config.on_device_lost) config.on_device_lost(failure);
        }
      }
    }
  }
};

namespace {

using Impl = TranserveServer::Impl;

// Queues one job per sentence of an admitted request, then answers its empty texts
// (Translator::IsEmptySource) with the empty translation without queueing them. `on_done(i,
// result)` and, when set, `on_progress(i, ids)` receive the sentence's index. An error (the queue
// is full) means nothing was queued and no callback will run.
absl::Status StartSentences(
    const Impl::Admission& admitted, std::function<bool()> cancelled,
    const std::function<void(size_t, absl::StatusOr<SearchResult>)>& on_done,
    const std::function<void(size_t, const std::vector<int32_t>&)>& on_progress) {
  const Translator& translator = *admitted.model->translator;
  const PreparedRequest& prepared = admitted.prepared;
  std::vector<SentenceJob> jobs;
  std::vector<size_t> empty;
  for (size_t i = 0; i < prepared.sources.size(); ++i) {
    if (translator.IsEmptySource(prepared.sources[i])) {
      empty.push_back(i);
      continue;
    }
    SentenceJob& job = jobs.emplace_back();
    job.source_ids = prepared.sources[i];  // the answer needs them too (counts, alignments)
    job.options = prepared.options;
    job.deadline = admitted.deadline;
    job.cancelled = cancelled;
    if (on_progress) {
      job.on_progress = [on_progress, i](const std::vector<int32_t>& ids) { on_progress(i, ids); };
    }
    job.on_done = [on_done, i](absl::StatusOr<SearchResult> r) { on_done(i, std::move(r)); };
  }
  if (!jobs.empty()) {
    if (auto s = admitted.model->scheduler->Submit(std::move(jobs)); !s.ok()) return s;
  }
  for (size_t i : empty) on_done(i, translator.EmptySourceResult(prepared.options));
  return absl::OkStatus();
}

// Aggregates the N sentences of one request (results in input order, the first error).
// Finishes only after every job's on_done, so the RPC's context outlives all callbacks.
class TranslateReactor final : public grpc::ServerUnaryReactor {
 public:
  TranslateReactor(Impl* impl, grpc::CallbackServerContext* ctx, v1::TranslateRequest req,
                   v1::TranslateResponse* resp)
      : impl_(impl), ctx_(ctx), request_(std::move(req)), resp_(resp), start_(absl::Now()) {
    impl_->Enter();
    Begin();
  }
  void OnCancel() override { cancelled_.store(true); }
  void OnDone() override {
    impl_->Leave();
    delete this;
  }

 private:
  void Begin() {
    auto admission = impl_->Admit(ctx_, *req_, &model_name_);
    if (!admission.ok()) return Fail(admission.status());
    admitted_ = *std::move(admission);
    const size_t n = admitted_.prepared.sources.size();
    results_.resize(n);
    remaining_ = n;
    auto s = StartSentences(
        admitted_, [this] { return cancelled_.load() || aborted_.load(); },
        [this](size_t i, absl::StatusOr<SearchResult> r) { OnSentence(i, std::move(r)); }, {});
    if (!s.ok()) return Fail(s);
  }

  void OnSentence(size_t i, absl::StatusOr<SearchResult> r) {
    bool last = false;
    {
      absl::MutexLock lock(&mu_);
      if (r.ok()) {
        results_[i] = *std::move(r);
      } else if (status_.ok()) {
        status_ = SentenceError(r.status(), admitted_.deadline);
        aborted_.store(true);  // the other sentences of this request leave at the next step
      }
      last = --remaining_ == 0;
    }
    if (last) Complete();
  }

  void Complete() {
    if (!status_.ok()) return Fail(status_);
    int64_t generated = 0;
    for (size_t i = 0; i < results_.size(); ++i) {
      FillTranslation(*admitted_.model->translator, admitted_.prepared.sources[i], results_[i],
                      admitted_.prepared.return_scores, admitted_.prepared.options.num_hypotheses,
                      resp_->add_translations(), &generated);
    }
    resp_->set_model(admitted_.model->name);
    admitted_.model->metrics->AddTokens(admitted_.prepared.source_tokens, generated);
    FinishWith(grpc::Status::OK);
  }

  void Fail(const absl::Status& s) { FinishWith(ToGrpcStatus(s)); }

  // Metrics are recorded before the status leaves, so a caller that got its answer sees it
  // counted.
  void FinishWith(const grpc::Status& g) {
    impl_->Record("Translate", g.error_code(), model_name_, start_, req_->texts_size());
    Finish(g);
  }

  Impl* const impl_;
  grpc::CallbackServerContext* const ctx_;
  const v1::TranslateRequest request_;
  const v1::TranslateRequest* const req_ = &request_;
  v1::TranslateResponse* const resp_;
  const absl::Time start_;
  std::string model_name_ = "";
  Impl::Admission admitted_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> aborted_{false};
  absl::Mutex mu_;
  std::vector<SearchResult> results_;
  size_t remaining_ = 0;
  absl::Status status_;
};

// Streams partial text per sentence as tokens are produced (greedy: the best hypothesis only
// grows, so its text does too; beam search sends each sentence's text when it is final, since
// the best beam may change), then each sentence's final result. One write in flight at a time.
class StreamReactor final : public grpc::ServerWriteReactor<v1::TranslateStreamResponse> {
 public:
  StreamReactor(Impl* impl, grpc::CallbackServerContext* ctx, v1::TranslateRequest req)
      : impl_(impl), ctx_(ctx), request_(std::move(req)), start_(absl::Now()) {
    impl_->Enter();
    Begin();
  }
  void OnCancel() override { cancelled_.store(true); }
  void OnWriteDone(bool ok) override {
    const v1::TranslateStreamResponse* next = nullptr;
    bool finish = false;
    {
      absl::MutexLock lock(&mu_);
      queue_.pop_front();
      if (!ok) {
        // The client is gone: stop the work and drop what is queued.
        aborted_.store(true);
        if (status_.ok()) status_ = absl::CancelledError("the stream was closed by the client");
        queue_.clear();
      }
      if (!queue_.empty()) {
        next = &queue_.front();
      } else {
        writing_ = false;
        finish = ShouldFinishLocked();
      }
    }
    if (next != nullptr) StartWrite(next);
    if (finish) DoFinish();
  }
  void OnDone() override {
    impl_->Leave();
    delete this;
  }

 private:
  void Begin() {
    auto admission = impl_->Admit(ctx_, *req_, &model_name_);
    if (!admission.ok()) return FailNow(admission.status());
    admitted_ = *std::move(admission);
    const bool partials = admitted_.prepared.options.beam_size == 1;
    const size_t n = admitted_.prepared.sources.size();
    sent_.resize(n);
    remaining_ = n;
    std::function<void(size_t, const std::vector<int32_t>&)> progress;
    if (partials)
      progress = [this](size_t i, const std::vector<int32_t>& ids) { OnProgress(i, ids); };
    auto s = StartSentences(
        admitted_, [this] { return cancelled_.load() || aborted_.load(); },
        [this](size_t i, absl::StatusOr<SearchResult> r) { OnSentence(i, std::move(r)); },
        progress);
    if (!s.ok()) return FailNow(s);
  }

  void OnProgress(size_t i, const std::vector<int32_t>& ids) {
    std::string text = admitted_.model->translator->Detokenize(ids);
    v1::TranslateStreamResponse msg;
    {
      absl::MutexLock lock(&mu_);
      if (aborted_.load()) return;
      std::string& sent = sent_[i];
      if (text.size() <= sent.size() || !absl::StartsWith(text, sent)) return;
      msg.set_index(static_cast<int32_t>(i));
      msg.set_text_delta(text.substr(sent.size()));
      msg.set_model(admitted_.model->name);
      sent = std::move(text);
    }
    Enqueue(std::move(msg));
  }

  void OnSentence(size_t i, absl::StatusOr<SearchResult> r) {
    std::optional<v1::TranslateStreamResponse> msg;
    bool finish = false;
    if (r.ok()) {
      v1::TranslateStreamResponse m;
      int64_t generated = 0;
      FillTranslation(*admitted_.model->translator, admitted_.prepared.sources[i], *r,
                      admitted_.prepared.return_scores, admitted_.prepared.options.num_hypotheses,
                      m.mutable_translation(), &generated);
      m.set_index(static_cast<int32_t>(i));
      m.set_done(true);
      m.set_model(admitted_.model->name);
      generated_.fetch_add(generated);
      msg = std::move(m);
    }
    {
      absl::MutexLock lock(&mu_);
      if (!r.ok() && status_.ok()) {
        status_ = SentenceError(r.status(), admitted_.deadline);
        aborted_.store(true);
      }
      if (msg.has_value()) {
        const std::string& final_text = msg->translation().text();
        if (absl::StartsWith(final_text, sent_[i])) {
          msg->set_text_delta(final_text.substr(sent_[i].size()));
        } else {
          Log().warn("stream: partial text of sentence {} is not a prefix of its final text", i);
          msg->set_text_delta(final_text);
        }
      }
      --remaining_;
      if (msg.has_value() && status_.ok()) {
        EnqueueLocked(std::move(*msg));
      }
      finish = ShouldFinishLocked();
    }
    StartPendingWrite();
    if (finish) DoFinish();
  }

  void Enqueue(v1::TranslateStreamResponse msg) {
    {
      absl::MutexLock lock(&mu_);
      EnqueueLocked(std::move(msg));
    }
    StartPendingWrite();
  }
  void EnqueueLocked(v1::TranslateStreamResponse msg) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    queue_.push_back(std::move(msg));
    if (!writing_) {
      writing_ = true;
      to_start_ = &queue_.front();
    }
  }
  void StartPendingWrite() {
    const v1::TranslateStreamResponse* m = nullptr;
    {
      absl::MutexLock lock(&mu_);
      std::swap(m, to_start_);
    }
    if (m != nullptr) StartWrite(m);
  }
  bool ShouldFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_ || remaining_ > 0 || writing_) return false;
    finished_ = true;
    return true;
  }
  void DoFinish() {
    absl::Status s;
    {
      absl::MutexLock lock(&mu_);
      s = status_;
    }
    if (s.ok())
      admitted_.model->metrics->AddTokens(admitted_.prepared.source_tokens, generated_.load());
    FailNow(s);
  }
  void FailNow(const absl::Status& s) {
    grpc::Status g = ToGrpcStatus(s);
    impl_->Record("TranslateStream", g.error_code(), model_name_, start_, req_->texts_size());
    Finish(g);
  }

  Impl* const impl_;
  grpc::CallbackServerContext* const ctx_;
  const v1::TranslateRequest request_;
  const v1::TranslateRequest* const req_ = &request_;
  const absl::Time start_;
  std::string model_name_ = "";
  Impl::Admission admitted_;
  std::atomic<int64_t> generated_{0};
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> aborted_{false};
  absl::Mutex mu_;
  std::deque<v1::TranslateStreamResponse> queue_ ABSL_GUARDED_BY(mu_);
  const v1::TranslateStreamResponse* to_start_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::string> sent_ ABSL_GUARDED_BY(mu_);
  size_t remaining_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

v1::TranslateRequest FromLenient(const internal::LenientTranslateRequest& lenient) {
  v1::TranslateRequest r;
  r.mutable_texts()->Reserve(lenient.texts_size());
  for (const auto& t : lenient.texts()) r.add_texts(t);
  r.set_model(lenient.model());
  if (lenient.has_options()) *r.mutable_options() = lenient.options();
  return r;
}

class TranslatorService final : public v1::Translator::CallbackService {
 public:
  // Translate and TranslateStream parse their request as LenientTranslateRequest (see
  // lenient_request.proto) so invalid UTF-8 reaches validation; methods 0 and 1 are the
  // declaration order in translator.proto.
  explicit TranslatorService(Impl* impl) : impl_(impl) {
    MarkMethodCallback(
        0, new grpc::internal::CallbackUnaryHandler<internal::LenientTranslateRequest,
                                                    v1::TranslateResponse>(
               [this](grpc::CallbackServerContext* ctx,
                      const internal::LenientTranslateRequest* req, v1::TranslateResponse* resp) {
                 return new TranslateReactor(impl_, ctx, FromLenient(*req), resp);
               }));
    MarkMethodCallback(
        1,
        new grpc::internal::CallbackServerStreamingHandler<internal::LenientTranslateRequest,
                                                           v1::TranslateStreamResponse>(
            [this](grpc::CallbackServerContext* ctx, const internal::LenientTranslateRequest* req) {
              return new StreamReactor(impl_, ctx, FromLenient(*req));
            }));
  }

  grpc::ServerUnaryReactor* Translate(grpc::CallbackServerContext* ctx,
                                      const v1::TranslateRequest* req,
                                      v1::TranslateResponse* resp) override {
    return new TranslateReactor(impl_, ctx, *req, resp);
  }
  grpc::ServerWriteReactor<v1::TranslateStreamResponse>* TranslateStream(
      grpc::CallbackServerContext* ctx, const v1::TranslateRequest* req) override {
    return new StreamReactor(impl_, ctx, *req);
  }
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* ctx,
                                       const v1::ListModelsRequest*,
                                       v1::ListModelsResponse* resp) override {
    const absl::Time start = absl::Now();
    auto* reactor = ctx->DefaultReactor();
    grpc::Status status = grpc::Status::OK;
    if (auto s = impl_->Authenticate(ctx); !s.ok()) {
      status = ToGrpcStatus(s);
    } else if (!impl_->ready.load()) {
      status = ToGrpcStatus(absl::UnavailableError("the server is still loading its models"));
    } else {
      for (auto& m : impl_->models) *resp->add_models() = m->info;
    }
    impl_->Record("ListModels", status.error_code(), "", start, 0);
    reactor->Finish(status);
    return reactor;
  }

 private:
  Impl* const impl_;
};

absl::StatusOr<std::string> ReadPem(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const ServerConfig& c) {
  if (c.tls_cert_file.empty() && c.tls_key_file.empty()) {
    if (!c.tls_client_ca_file.empty()) {
      return absl::InvalidArgumentError("--tls_client_ca needs --tls_cert and --tls_key");
    }
    return grpc::InsecureServerCredentials();
  }
  if (c.tls_cert_file.empty() || c.tls_key_file.empty()) {
    return absl::InvalidArgumentError("TLS needs both --tls_cert and --tls_key");
  }
  auto cert = ReadPem(c.tls_cert_file);
  if (!cert.ok()) return cert.status();
  auto key = ReadPem(c.tls_key_file);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*key, *cert});
  if (!c.tls_client_ca_file.empty()) {
    auto ca = ReadPem(c.tls_client_ca_file);
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

std::string ModelName(const std::string& dir) {
  std::filesystem::path p(dir);
  while (!p.empty() && p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

}  // namespace

TranserveServer::TranserveServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<TranserveServer>> TranserveServer::Start(
    const ServerConfig& config) {
  if (config.model_dirs.empty()) return absl::InvalidArgumentError("no --model_dir given");
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  // Names are checked before anything listens.
  std::vector<std::string> names;
  for (const auto& dir : config.model_dirs) {
    const std::string name = ModelName(dir);
    if (name.empty()) return absl::InvalidArgumentError(absl::StrCat("bad model_dir '", dir, "'"));
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("two model directories are named '", name, "': names must be unique"));
    }
    names.push_back(name);
  }

  grpc::EnableDefaultHealthCheckService(true);                 // before the builder
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();  // keeps grpc++_reflection linked
  impl->service = std::make_unique<TranslatorService>(impl.get());
  auto credentials = Credentials(config);
  if (!credentials.ok()) return credentials.status();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config.address, *credentials, &impl->port);
  builder.RegisterService(impl->service.get());
  builder.SetMaxReceiveMessageSize(config.max_message_bytes);
  builder.SetMaxSendMessageSize(config.max_message_bytes);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, config.keepalive_time_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, config.keepalive_timeout_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || impl->port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", config.address));
  }
  impl->UpdateHealth();  // NOT_SERVING until the models are loaded
  if (!config.metrics_address.empty()) {
    impl->metrics_port = impl->metrics.Expose(config.metrics_address);
    if (impl->metrics_port < 0) {
      impl->server->Shutdown();
      return absl::UnavailableError(
          absl::StrCat("cannot serve metrics on ", config.metrics_address));
    }
  }
  Impl* raw = impl.get();
  impl->stats_thread = std::thread([raw] {
    while (!raw->stop_stats.load()) {
      raw->RefreshGauges();
      absl::SleepFor(absl::Milliseconds(250));
    }
  });
  return std::unique_ptr<TranserveServer>(new TranserveServer(std::move(impl)));
}

absl::Status TranserveServer::LoadModels() {
  Impl& impl = *impl_;
  if (impl.ready.load()) return absl::OkStatus();
  std::vector<std::unique_ptr<ServedModel>> models;
  for (const auto& dir : impl.config.model_dirs) {
    auto m = std::make_unique<ServedModel>();
    m->name = ModelName(dir);
    m->dir = dir;
    TranslatorOptions topts;
    topts.model_dir = dir;
    topts.device = impl.config.device;
    topts.dtype = impl.config.dtype;
    topts.num_threads = impl.config.num_threads;
    topts.kv_cache_max_bytes = impl.config.kv_cache_bytes;
    auto translator = Translator::Create(topts);
    if (!translator.ok()) {
      return absl::Status(
          translator.status().code(),
          absl::StrCat("model '", m->name, "' (", dir, "): ", translator.status().message()));
    }
    m->translator = *std::move(translator);
    if (impl.config.warmup) {
      DecodingOptions o = m->translator->DefaultOptions();
      o.beam_size = 1;
      o.num_hypotheses = 1;
      o.max_length = std::min(o.max_length, 8);
      o.min_length = 0;
      const std::vector<std::string> texts{"Hello world."};
      if (auto r = m->translator->Translate(texts, o); !r.ok()) {
        return absl::Status(
            r.status().code(),
            absl::StrCat("model '", m->name, "': warm-up failed: ", r.status().message()));
      }
    }
    const MarianConfig& c = m->translator->model().config;
    const std::string device(DeviceName(m->translator->device()));
    const std::string arch =
        absl::StrCat("marian transformer ", c.encoder_layers, "+", c.decoder_layers,
                     " layers, d_model ", c.d_model, ", ", c.encoder_attention_heads,
                     " heads, ffn ", c.encoder_ffn_dim, ", vocab ", c.vocab_size);
    m->info.set_name(m->name);
    m->info.set_architecture(arch);
    m->info.set_device(device);
    m->info.set_dtype(m->translator->dtype());
    m->info.set_max_source_tokens(static_cast<int32_t>(
        std::min<int64_t>(c.max_position_embeddings, impl.config.limits.max_source_tokens)));
    m->info.set_is_default(models.empty());
    m->metrics = impl.metrics.AddModel(m->name, device, m->translator->dtype(), arch,
                                       impl.config.kv_cache_bytes);
    SchedulerOptions sopts = impl.config.scheduler;
    sopts.kv_cache_max_bytes = impl.config.kv_cache_bytes;
    m->scheduler = std::make_unique<Scheduler>(m->translator.get(), sopts);
    m->scheduler->SetObserver(m->metrics);
    Log().info("model '{}' loaded from {} on {}: {}", m->name, dir, device, arch);
    models.push_back(std::move(m));
  }
  impl.models = std::move(models);
  impl.ready.store(true);
  impl.UpdateHealth();
  return absl::OkStatus();
}

absl::Status TranserveServer::Drain(absl::Duration timeout) {
  Impl& impl = *impl_;
  {
    absl::MutexLock lock(&impl.drain_mu);
    if (impl.drain_started) return impl.drain_result;
    impl.drain_started = true;
  }
  // The time beyond `timeout` (kDrainGrace in all): a decoder step's grace to return once the
  // schedulers stop, then gRPC's shutdown (it cancels what is left), then its Wait.
  constexpr absl::Duration kStepGrace = absl::Seconds(2);
  constexpr absl::Duration kGrpcShutdownAfter = absl::Milliseconds(2500);
  constexpr absl::Duration kGrpcWaitAfter = absl::Milliseconds(3500);
  static_assert(kGrpcWaitAfter < kDrainGrace);
  const absl::Time deadline = absl::Now() + timeout;
  impl.draining.store(true);
  absl::Status result;
  // Health first (watchers and probes learn it), then gRPC's own shutdown at once: it closes the
  // listener and sends GOAWAY, so a load balancer's next call fails to connect or is refused
  // before it reaches us — an error it can retry on another replica — instead of being accepted
  // and answered UNAVAILABLE. Calls already running are left to finish; its deadline comes after
  // the schedulers' (and their step grace) so that every remaining call is answered by them,
  // not cancelled. Its Wait is bounded too: a call that never finishes must not hold the exit.
  std::thread grpc_stop;
  auto grpc_stopped = std::make_shared<absl::Notification>();
  if (impl.server) {
    impl.UpdateHealth();
    grpc::Server* server = impl.server.get();
    grpc_stop = std::thread([server, grpc_stopped, deadline] {
      server->Shutdown(absl::ToChronoTime(deadline + kGrpcShutdownAfter));
      server->Wait();
      grpc_stopped->Notify();
    });
  }
  {
    absl::MutexLock lock(&impl.mu);
    auto idle = [&impl]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(impl.mu) { return impl.in_flight == 0; };
    impl.mu.AwaitWithDeadline(absl::Condition(&idle), deadline);
  }
  // What is still running gets the rest of the time, then UNAVAILABLE. The models stop side by
  // side, so that stuck ones cost one step grace, not one each.
  if (impl.ready.load()) {
    const absl::Duration left = std::max(absl::ZeroDuration(), deadline - absl::Now());
    std::vector<absl::Status> stopped(impl.models.size());
    std::vector<std::thread> stoppers;
    for (size_t i = 0; i < impl.models.size(); ++i) {
      stoppers.emplace_back([&impl, &stopped, i, left] {
        stopped[i] = impl.models[i]->scheduler->Shutdown(left, kStepGrace);
      });
    }
    for (std::thread& t : stoppers) t.join();
    for (size_t i = 0; i < impl.models.size(); ++i) {
      if (stopped[i].ok()) continue;
      Log().error("model '{}': the drain found its decoder stuck: {}", impl.models[i]->name,
                  std::string(stopped[i].message()));
      if (result.ok()) {
        result = absl::DeadlineExceededError(
            absl::StrCat("model '", impl.models[i]->name, "': ", stopped[i].message()));
      }
    }
  }
  if (grpc_stop.joinable()) {
    if (grpc_stopped->WaitForNotificationWithDeadline(deadline + kGrpcWaitAfter)) {
      grpc_stop.join();
    } else {
      Log().error("gRPC calls still running {} after the drain deadline: giving up on them",
                  absl::FormatDuration(absl::Now() - deadline));
      grpc_stop.detach();  // it uses the server, which is then leaked with the rest
      if (result.ok()) result = absl::DeadlineExceededError("gRPC's shutdown did not finish");
    }
  }
  impl.stop_stats.store(true);
  if (impl.stats_thread.joinable()) impl.stats_thread.join();
  absl::MutexLock lock(&impl.drain_mu);
  impl.drain_result = result;
  return result;
}

TranserveServer::~TranserveServer() {
  if (!Drain(absl::ZeroDuration()).ok()) {
    // A stuck decoder or gRPC thread still uses the models and the server: destroying them
    // would pull them from under it. The process is about to end anyway.
    static_cast<void>(impl_.release());
  }
  // Schedulers go before their translators (ServedModel member order does this per model).
}

int TranserveServer::port() const { return impl_->port; }
int TranserveServer::metrics_port() const { return impl_->metrics_port; }

std::string TranserveServer::MetricsText() {
  impl_->RefreshGauges();
  return impl_->metrics.Text();
}

std::string TranserveServer::AnsweredSummary() const {
  int64_t total = 0;
  std::vector<std::string> parts;
  for (const auto& [code, n] : impl_->metrics.TranslationsByCode()) {
    total += n;
    parts.push_back(absl::StrCat(code, "=", n));
  }
  return absl::StrCat("answered=", total, parts.empty() ? "" : " ", absl::StrJoin(parts, " "));
}

std::string TranserveServer::Summary() const {
  const Impl& impl = *impl_;
  std::vector<std::string> models;
  for (const auto& m : impl.models) {
    models.push_back(absl::StrCat(m->name, "@", m->info.device()));
  }
  const auto& l = impl.config.limits;
  const auto& s = impl.config.scheduler;
  return absl::StrCat(
      "models=[", absl::StrJoin(models, ","), "] device=", impl.config.device,
      " threads=", impl.config.num_threads, " port=", impl.port,
      " metrics_port=", impl.metrics_port,
      " batching=", s.mode == BatchingMode::kContinuous ? "continuous" : "static",
      " max_batch_sequences=", s.max_batch_sequences, " max_batch_tokens=", s.max_batch_tokens,
      " max_queue=", s.max_queue, " max_queue_wait=", absl::FormatDuration(s.max_queue_wait),
      " kv_cache_bytes=", impl.config.kv_cache_bytes, " limits: texts=", l.max_texts,
      " chars=", l.max_text_chars, " source_tokens=", l.max_source_tokens,
      " beam=", l.max_beam_size, " max_length=", l.max_length, " tls=",
      impl.config.tls_cert_file.empty()        ? "off"
      : impl.config.tls_client_ca_file.empty() ? "on"
                                               : "mutual",
      " auth_tokens=", impl.config.auth_tokens.size());
}

}  // namespace transerve
