#include "profile/profile_store.h"

#include <utility>

namespace flashtune {
namespace {

// recompute_best's rule for one new pair: strictly faster ok medians replace, so ties keep the
// earlier pair as a full recomputation would. Constant time, unlike recomputing over the profile.
void update_best(Profile& p, const Measurement& m) {
  if (m.status != status::kOk || !m.timing || !(m.timing->median_ms > 0)) return;
  const auto it = p.best.find(m.workload);
  if (it == p.best.end() || m.timing->median_ms < it->second.median_ms)
    p.best[m.workload] = BestConfig{m.config, m.timing->median_ms};
}

}  // namespace

ProfileStore::ProfileStore(std::string path, Profile initial) : path_(std::move(path)), profile_(std::move(initial)) {
  replayed_ = replay_journal(journal_path(path_), profile_);
  recompute_best(profile_);
  compact_locked();
}

ProfileStore::~ProfileStore() = default;

void ProfileStore::record(Measurement m) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!journal_) journal_ = std::make_unique<JournalWriter>(journal_path(path_), profile_.gpu);
  journal_->append(m);
  update_best(profile_, m);
  profile_.measurements.push_back(std::move(m));
}

void ProfileStore::compact() {
  std::lock_guard<std::mutex> lock(mutex_);
  compact_locked();
}

void ProfileStore::compact_locked() {
  // Order matters for a crash in between: the profile holds every pair before the journal goes,
  // and a journal replayed over a profile that already holds its pairs adds nothing.
  write_profile_atomic(path_, profile_);
  journal_.reset();
  remove_durably(journal_path(path_));
}

Profile ProfileStore::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return profile_;
}

}  // namespace flashtune
