#!/usr/bin/python3
"""A LibreTranslate-compatible HTTP server around CTranslate2: the comparison server of
bench/server_vs_ctranslate2.py.

It is what a platform engineer would write to serve a CTranslate2 model without transerve:
Python's ThreadingHTTPServer, SentencePiece for the pieces, and a dynamic batcher in front of
ctranslate2.Translator.

  ctranslate2_http_server.py --model CT2_DIR --spm_dir HF_DIR [--compute_type int8]
      [--inter_threads 1] [--intra_threads 2] [--max_batch_size 32] [--max_wait_ms 5]
      [--beam_size 4] [--max_length 512] [--host 127.0.0.1] [--port 5000]

The API:
- POST /translate: {"q": str or [str], "source": "en" or "auto", "target": "de"}. The body is
  JSON or a form. The answer is {"translatedText": str or [str]}, following the shape of q.
  Errors are {"error": "..."}: 400 for bad input, 429 when the queue is full, 500 when the
  translation fails.
- GET /languages: LibreTranslate's list, here one pair.
- GET /healthz: 200 once the model is loaded and warmed up. The port only opens then anyway.

Batching: every HTTP request runs on its own thread (ThreadingHTTPServer). The thread
tokenizes its texts, queues them, and waits. `--inter_threads` batcher threads each do the same
loop. A batcher takes the sentences that are queued, up to --max_batch_size. It waits at most
--max_wait_ms after the oldest one arrived for more to come. Then it calls translate_batch.
That call releases the GIL and runs on one of CTranslate2's inter_threads workers. The
batchers therefore translate in parallel. While they are busy, new requests pile up, and the
next free batcher takes them as one batch. Each text of q is translated as one segment. There
is no sentence splitting; the benchmark sends one sentence per request.

Decoding follows the model's generation defaults, which transerve uses: beam 4, max_length
512 (config.json / generation_config.json of models/en-de-small), length penalty 1, one
hypothesis. Sources longer than 512 pieces are truncated, as transerve cuts them at 512
(--max_source_tokens).

Needs the Python modules ctranslate2 (the anchor kit's build: PYTHONPATH=WORKDIR/pylib-dnnl)
and sentencepiece (Debian's python3-sentencepiece). Set OMP_NUM_THREADS to --intra_threads.
"""
import argparse
import collections
import json
import os
import signal
import sys
import threading
import time
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import ctranslate2
import sentencepiece

EOS = "</s>"


class QueueFull(Exception):
    pass


class Job:
    """One request's sentences: pieces in, text out, and an event its HTTP thread waits on."""

    __slots__ = ("pieces", "results", "error", "remaining", "done", "lock")

    def __init__(self, pieces):
        self.pieces = pieces
        self.results = [None] * len(pieces)
        self.error = None
        self.remaining = len(pieces)
        self.done = threading.Event()
        self.lock = threading.Lock()

    def finish(self, index, text=None, error=None):
        with self.lock:
            if error is not None and self.error is None:
                self.error = error
            self.results[index] = text
            self.remaining -= 1
            last = self.remaining == 0
        if last:
            self.done.set()


class Batcher:
    """A queue of sentences and `workers` threads that translate them in batches."""

    def __init__(self, translator, target_sp, workers, max_batch_size, max_wait_s, max_queue,
                 options):
        self.translator = translator
        self.target_sp = target_sp
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_s
        self.max_queue = max_queue
        self.options = options
        self.queue = collections.deque()  # (arrival time, job, index)
        self.cond = threading.Condition()
        self.gather = threading.Lock()  # one batcher fills a batch at a time
        self.stats = collections.Counter()
        self.threads = [threading.Thread(target=self._run, name="batcher-%d" % i, daemon=True)
                        for i in range(workers)]
        for t in self.threads:
            t.start()

    def submit(self, job):
        now = time.monotonic()
        with self.cond:
            if len(self.queue) + len(job.pieces) > self.max_queue:
                raise QueueFull()
            for i in range(len(job.pieces)):
                self.queue.append((now, job, i))
            self.cond.notify()

    def _take(self):
        """Waits for a batch: what is queued, up to max_batch_size, once the oldest sentence
        has waited max_wait_s or the batch is full."""
        with self.gather, self.cond:
            while not self.queue:
                self.cond.wait()
            deadline = self.queue[0][0] + self.max_wait_s
            while len(self.queue) < self.max_batch_size:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(left)
            n = min(len(self.queue), self.max_batch_size)
            return [self.queue.popleft() for _ in range(n)]

    def _run(self):
        while True:
            batch = self._take()
            try:
                results = self.translator.translate_batch(
                    [job.pieces[i] for _, job, i in batch], **self.options)
                texts = [self.target_sp.decode(r.hypotheses[0]) for r in results]
            except Exception as e:  # the model failed: every sentence of the batch says so
                for _, job, i in batch:
                    job.finish(i, error=e)
                continue
            self.stats["batches"] += 1
            self.stats["sentences"] += len(batch)
            for (_, job, i), text in zip(batch, texts):
                job.finish(i, text)


class App:
    def __init__(self, args):
        spm_dir = args.spm_dir
        self.source_sp = sentencepiece.SentencePieceProcessor(
            model_file=os.path.join(spm_dir, "source.spm"))
        self.target_sp = sentencepiece.SentencePieceProcessor(
            model_file=os.path.join(spm_dir, "target.spm"))
        self.source_language = args.source_language
        self.target_language = args.target_language
        self.timeout_s = args.request_timeout
        translator = ctranslate2.Translator(
            args.model, device="cpu", compute_type=args.compute_type,
            inter_threads=args.inter_threads, intra_threads=args.intra_threads)
        options = dict(beam_size=args.beam_size, num_hypotheses=1, length_penalty=1.0,
                       max_decoding_length=args.max_length, max_input_length=512,
                       max_batch_size=0, return_scores=False)
        # Warm-up: one call of each batch size class before the port opens.
        warm = self.tokenize(["Hello world."] * 2)
        translator.translate_batch(warm[:1], **options)
        translator.translate_batch(warm, **options)
        self.batcher = Batcher(translator, self.target_sp, args.inter_threads,
                               args.max_batch_size, args.max_wait_ms / 1000.0, args.max_queue,
                               options)

    def tokenize(self, texts):
        return [pieces + [EOS] for pieces in self.source_sp.encode(texts, out_type=str)]

    def translate(self, texts):
        """Returns the translations of texts, in order; raises QueueFull or the model's error."""
        out = [""] * len(texts)
        todo = [i for i, t in enumerate(texts) if t.strip()]
        if not todo:
            return out
        job = Job(self.tokenize([texts[i] for i in todo]))
        self.batcher.submit(job)
        if not job.done.wait(self.timeout_s):
            raise TimeoutError("translation took longer than %g s" % self.timeout_s)
        if job.error is not None:
            raise job.error
        for i, text in zip(todo, job.results):
            out[i] = text
        return out

    def languages(self):
        return [{"code": self.source_language, "name": self.source_language,
                 "targets": [self.target_language]},
                {"code": self.target_language, "name": self.target_language, "targets": []}]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as LibreTranslate's clients expect
    server_version = "ct2-libretranslate/1"
    app = None  # set in main()

    def log_message(self, format, *args):  # no access log: one line per request costs time
        pass

    def _reply(self, status, obj):
        body = json.dumps(obj, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status, message):
        self._reply(status, {"error": message})

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        if path == "/languages":
            self._reply(HTTPStatus.OK, self.app.languages())
        elif path == "/healthz":
            self._reply(HTTPStatus.OK, {"status": "SERVING"})
        else:
            self._error(HTTPStatus.NOT_FOUND, "Not Found")

    def _fields(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n > 0 else b""
        kind = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        fields = {k: v[0] for k, v in query.items()}
        if kind == "application/x-www-form-urlencoded":
            form = urllib.parse.parse_qs(raw.decode("utf-8"))
            fields.update({k: (v if k == "q" and len(v) > 1 else v[0]) for k, v in form.items()})
        elif raw:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
            fields.update(body)
        return fields

    def do_POST(self):
        if urllib.parse.urlsplit(self.path).path != "/translate":
            return self._error(HTTPStatus.NOT_FOUND, "Not Found")
        try:
            fields = self._fields()
        except (ValueError, UnicodeDecodeError) as e:
            return self._error(HTTPStatus.BAD_REQUEST, "Invalid request: %s" % e)
        q, source, target = fields.get("q"), fields.get("source"), fields.get("target")
        if q is None:
            return self._error(HTTPStatus.BAD_REQUEST, "Invalid request: missing q parameter")
        if not source:
            return self._error(HTTPStatus.BAD_REQUEST,
                               "Invalid request: missing source parameter")
        if not target:
            return self._error(HTTPStatus.BAD_REQUEST,
                               "Invalid request: missing target parameter")
        if source not in (self.app.source_language, "auto"):
            return self._error(HTTPStatus.BAD_REQUEST, "%s is not supported" % source)
        if target != self.app.target_language:
            return self._error(HTTPStatus.BAD_REQUEST, "%s is not supported" % target)
        batch = isinstance(q, list)
        texts = q if batch else [q]
        if not all(isinstance(t, str) for t in texts):
            return self._error(HTTPStatus.BAD_REQUEST, "Invalid request: q must be text")
        try:
            out = self.app.translate(texts)
        except QueueFull:
            return self._error(HTTPStatus.TOO_MANY_REQUESTS, "Too many requests queued")
        except TimeoutError as e:
            return self._error(HTTPStatus.GATEWAY_TIMEOUT, str(e))
        except Exception as e:
            return self._error(HTTPStatus.INTERNAL_SERVER_ERROR, "Cannot translate: %s" % e)
        answer = {"translatedText": out if batch else out[0]}
        if source == "auto":
            answer["detectedLanguage"] = {"confidence": 100.0,
                                          "language": self.app.source_language}
        self._reply(HTTPStatus.OK, answer)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # listen backlog: an open-loop client opens many connections


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="CTranslate2 model directory")
    ap.add_argument("--spm_dir", required=True, help="directory of source.spm and target.spm")
    ap.add_argument("--compute_type", default="default", help="int8, float32, ...")
    ap.add_argument("--inter_threads", type=int, default=1,
                    help="CTranslate2 workers, and as many batcher threads")
    ap.add_argument("--intra_threads", type=int, default=0,
                    help="compute threads per worker (0: CTranslate2's default)")
    ap.add_argument("--max_batch_size", type=int, default=32, help="most sentences in one batch")
    ap.add_argument("--max_wait_ms", type=float, default=5.0,
                    help="how long the oldest queued sentence waits for a batch to fill")
    ap.add_argument("--max_queue", type=int, default=1024,
                    help="most sentences queued; beyond, requests get 429")
    ap.add_argument("--request_timeout", type=float, default=120.0, help="seconds; then 504")
    ap.add_argument("--beam_size", type=int, default=4)
    ap.add_argument("--max_length", type=int, default=512, help="most target tokens")
    ap.add_argument("--source_language", default="en")
    ap.add_argument("--target_language", default="de")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=5000)
    args = ap.parse_args()

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    t0 = time.monotonic()
    Handler.app = App(args)
    server = Server((args.host, args.port), Handler)
    print("ctranslate2_http_server: %s (%s, %d x %d threads, batch <= %d, wait %g ms) on "
          "http://%s:%d, ready in %.1f s" % (
              args.model, args.compute_type, args.inter_threads, args.intra_threads,
              args.max_batch_size, args.max_wait_ms, args.host, server.server_address[1],
              time.monotonic() - t0), file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        s = Handler.app.batcher.stats
        if s["batches"]:
            print("ctranslate2_http_server: %d sentences in %d batches (mean %.1f)" % (
                s["sentences"], s["batches"], s["sentences"] / s["batches"]),
                file=sys.stderr, flush=True)
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
