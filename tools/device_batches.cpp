#include "tools/device_batches.h"

namespace seg::cli {

DeviceBatches::DeviceBatches(data::TrainLoader& loader, Device device, DType input_dtype)
    : loader_(loader), device_(device), input_dtype_(input_dtype) {}

std::pair<data::TrainSubBatch, double> DeviceBatches::next_host() {
  double waited = 0;
  if (host_.empty()) {
    data::TrainBatch b = loader_.next();
    waited = b.wait_seconds;
    for (data::TrainSubBatch& sb : b.sub_batches) host_.push_back(std::move(sb));
  }
  data::TrainSubBatch sb = std::move(host_.front());
  host_.pop_front();
  return {std::move(sb), waited};
}

DeviceBatches::InFlight DeviceBatches::upload(data::TrainSubBatch sb, double wait_seconds) {
  InFlight f;
  f.batch.images_count = sb.batch_size();
  f.batch.wait_seconds = wait_seconds;
  {
    // Allocated and written on the copy stream: its blocks belong to it (core/allocator.h).
    StreamGuard on_copy(device_, copy_stream(device_));
    f.batch.images = sb.images.to(device_);
    f.batch.labels = sb.labels.to(device_);
    f.copied = std::make_unique<Event>();
    f.copied->record(copy_stream(device_));
  }
  return f;
}

DeviceBatch DeviceBatches::next() {
  if (device_.is_cpu()) {
    auto [sb, waited] = next_host();
    return DeviceBatch{sb.images.to(input_dtype_), sb.labels, sb.batch_size(), waited};
  }
  auto take = [&] {
    auto [sb, waited] = next_host();
    return upload(std::move(sb), waited);
  };
  InFlight cur = pending_ ? std::move(*pending_) : take();
  pending_.reset();
  const cuda::Stream compute = current_stream(device_);
  cur.copied->wait(compute);  // the compute stream starts on the batch only after its copy
  cur.batch.images.record_stream(compute);
  cur.batch.labels.record_stream(compute);
  pending_ = take();  // overlaps the step that is about to run on `cur`
  cur.batch.images = cur.batch.images.to(input_dtype_);  // on the device, on the compute stream
  return std::move(cur.batch);
}

}  // namespace seg::cli
