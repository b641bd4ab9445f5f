// send_am: the send's state on the heap, freed by UCX's completion callback.
#include "remote/am_send.h"

#include <memory>
#include <vector>

namespace forkfeed {
namespace {

struct SendState {
  std::vector<std::byte> header;
  AmPayload payload;
  std::function<void(ucs_status_t)> done;
  const UcxApi* api;

  void finish(ucs_status_t status) {
    if (done) done(status);
  }
};

void on_sent(void* request, ucs_status_t status, void* user_data) {
  std::unique_ptr<SendState> state(static_cast<SendState*>(user_data));
  state->finish(status);
  state->api->ucp_request_free(request);
}

}  // namespace

void send_am(UcxWorker& worker, ucp_ep_h ep, unsigned id, const void* header, std::size_t header_bytes,
             AmPayload payload, std::uint32_t flags, std::function<void(ucs_status_t)> done) {
  auto state = std::make_unique<SendState>();
  const auto* h = static_cast<const std::byte*>(header);
  if (header_bytes > 0) state->header.assign(h, h + header_bytes);
  state->payload = std::move(payload);
  state->done = std::move(done);
  state->api = &worker.api();
  const void* data = state->payload.data != nullptr ? state->payload.data : state->payload.owned.data();
  const std::size_t bytes =
      state->payload.data != nullptr ? state->payload.bytes : state->payload.owned.size();
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  param.cb.send = on_sent;
  param.user_data = state.get();
  param.flags = flags;
  if (state->payload.memh != nullptr) {
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    param.memh = state->payload.memh;
  }
  ucs_status_ptr_t request =
      worker.api().ucp_am_send_nbx(ep, id, state->header.data(), state->header.size(), data, bytes, &param);
  if (request == nullptr) {
    state->finish(UCS_OK);
  } else if (UCS_PTR_IS_ERR(request)) {
    state->finish(UCS_PTR_STATUS(request));
  } else {
    (void)state.release();  // on_sent frees it
  }
}

}  // namespace forkfeed
