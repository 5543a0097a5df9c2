// Stream: a generation driven from Python, one step per next() (stepper.h), on a session it
// keeps open (PySession::streaming) until it is exhausted, closed or collected.
#include <pybind11/stl.h>

#include "bindings.h"
#include "call_guard.h"
#include "fasa/engine/lossless_options.h"
#include "stepper.h"

namespace fasa::py {

namespace {

class Stream {
 public:
  Stream(std::shared_ptr<PySession> s, std::vector<int32_t> prompt, const pb::dict& args,
         const std::string& lossless)
      : s_(std::move(s)) {
    const GenerateOptions go = generate_options(args);
    const LosslessOptions lo = parse_lossless(lossless);
    pb::gil_scoped_release nogil;
    const std::lock_guard<std::mutex> lock(s_->mu);
    check_free(*s_);
    st_ = std::make_unique<Stepper>(*s_, std::move(prompt), go, lo);
    s_->streaming = true;
  }
  ~Stream() { close(); }

  // The next piece of text ("" possible) and whether the generation is done.
  std::pair<pb::str, bool> next() {
    if (!st_) fail("the stream is closed");
    if (st_->failed()) fail("the stream stopped with an error");
    if (st_->done()) return {pb::str(""), true};
    const auto [piece, done] = guarded([this](CallGuard&) {
      const std::lock_guard<std::mutex> lock(s_->mu);
      std::string p = st_->step();
      return std::make_pair(std::move(p), st_->done());
    });
    return {utf8_text(piece), done};
  }

  pb::dict outcome() {
    if (!st_) fail("the stream is closed");
    GenerateOutcome o;
    {
      pb::gil_scoped_release nogil;
      const std::lock_guard<std::mutex> lock(s_->mu);
      o = st_->outcome();
    }
    return outcome_dict(o);
  }

  // Ends the stream: the session is free again (and freed, when nothing else holds it).
  void close() {
    if (!s_) return;
    {
      pb::gil_scoped_release nogil;
      const std::lock_guard<std::mutex> lock(s_->mu);
      st_.reset();
      s_->streaming = false;
    }
    s_.reset();
  }

 private:
  std::shared_ptr<PySession> s_;
  std::unique_ptr<Stepper> st_;
};

}  // namespace

void bind_stream(pb::module_& m) {
  pb::class_<Stream>(m, "Stream")
      .def(pb::init<std::shared_ptr<PySession>, std::vector<int32_t>, const pb::dict&,
                    const std::string&>(),
           pb::arg("session"), pb::arg("prompt"), pb::arg("args"), pb::arg("lossless"))
      .def("next", &Stream::next)
      .def("outcome", &Stream::outcome)
      .def("close", &Stream::close);
}

}  // namespace fasa::py
