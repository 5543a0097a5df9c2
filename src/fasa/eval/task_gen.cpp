#include "fasa/eval/task_gen.h"

#include <algorithm>
#include <map>
#include <set>

#include "fasa/core/error.h"
#include "fasa/eval/haystack.h"

namespace fasa {

namespace {

// Word lists for keys and the planted facts (invented names, so no answer is known in advance).
const std::vector<std::string> kAdjectives = {"amber", "brisk",  "calm",   "dusty",  "eager",
                                              "faint", "gentle", "hollow", "icy",    "jolly",
                                              "keen",  "lofty",  "mellow", "narrow", "olive",
                                              "proud", "quiet",  "rusty",  "silent", "tidy",
                                              "vivid", "wary",   "young",  "zesty",  "bold",
                                              "crisp", "damp",   "fierce", "grand",  "humble"};
const std::vector<std::string> kNouns = {"anchor", "badger",  "candle", "dolphin",  "ember",
                                         "falcon", "garden",  "harbor", "island",   "jacket",
                                         "kettle", "lantern", "meadow", "needle",   "orchard",
                                         "pepper", "quarry",  "ribbon", "saddle",   "thimble",
                                         "valley", "walnut",  "yarrow", "zephyr",   "beacon",
                                         "cellar", "drum",    "engine", "fountain", "gravel"};
const std::vector<std::string> kFirst = {"Adela",   "Bram",    "Corin",    "Delphine", "Edric",
                                         "Fenna",   "Gideon",  "Halvard",  "Isolde",   "Jasper",
                                         "Kestrel", "Linnea",  "Mattias",  "Nerys",    "Osric",
                                         "Petra",   "Quillon", "Rosalind", "Soren",    "Tamsin",
                                         "Ulric",   "Vesna",   "Wystan",   "Yolande"};
const std::vector<std::string> kLast = {"Ashgrove",    "Blackwood",  "Crowther",  "Dunmore",
                                        "Everleigh",   "Fairbank",   "Greystone", "Hollins",
                                        "Inchbald",    "Jessop",     "Kettering", "Lowther",
                                        "Marchbank",   "Nettleford", "Oakhurst",  "Pendry",
                                        "Quarrington", "Rushworth",  "Stanforth", "Thistlewood"};
const std::vector<std::string> kTowns = {"Brackenmoor", "Caddisford", "Dunhollow",  "Elmsworth",
                                         "Fernwick",    "Glimmerton", "Harrowdene", "Ivelmouth",
                                         "Kestlewick",  "Lowmarsh",   "Mirefield",  "Northwold",
                                         "Oxhallow",    "Pellingham", "Quenmere",   "Rookhaven",
                                         "Saltmere",    "Thornbury"};
const std::vector<std::string> kAnimals = {"horse", "goat", "parrot", "hound", "donkey", "cat"};
const std::vector<std::string> kColors = {"grey", "white", "black", "brown", "speckled", "red"};

template <typename T>
const T& pick(TaskRng& rng, const std::vector<T>& v) {
  return v[rng.below(v.size())];
}

std::string digits(TaskRng& rng, int n) {  // n digits, no leading zero
  std::string s(1, static_cast<char>('1' + rng.below(9)));
  for (int i = 1; i < n; ++i) s += static_cast<char>('0' + rng.below(10));
  return s;
}

std::string distinct_key(TaskRng& rng, std::set<std::string>& used) {
  for (;;) {
    std::string k = pick(rng, kAdjectives) + "-" + pick(rng, kNouns);
    if (used.insert(k).second) return k;
  }
}

std::string person(TaskRng& rng) { return pick(rng, kFirst) + " " + pick(rng, kLast); }

// A task before sizing: instruction, context (real-text filler with needles, or a custom body
// of n units), question. `body` also yields the answers when they depend on the size.
struct Draft {
  std::string head, tail;
  std::vector<Needle> needles;
  std::function<std::string(int64_t, std::vector<std::string>*)> body;  // null: haystack
  std::vector<std::string> answers;
  TaskMetric metric = TaskMetric::Contains;
  int max_new_tokens = 16;
};

std::vector<double> sorted_depths(TaskRng& rng, int n) {
  std::vector<double> d(n);
  for (auto& x : d) x = rng.unit();
  std::sort(d.begin(), d.end());
  return d;
}

const char* kNiahHead =
    "Some special magic numbers are hidden within the following text. Make sure to memorize "
    "them. I will quiz you about the numbers afterwards.\n\n";

std::string magic_needle(const std::string& key, const std::string& value) {
  return "One of the special magic numbers for " + key + " is: " + value + ".";
}

Draft passkey(TaskRng& rng) {
  Draft d;
  const std::string key = digits(rng, 5);
  d.head =
      "There is an important piece of information hidden inside a lot of irrelevant text. "
      "Find it and memorize it. I will quiz you about it.\n\n";
  d.needles = {
      {rng.unit(), "The pass key is " + key + ". Remember it. " + key + " is the pass key."}};
  d.tail = "\n\nWhat is the pass key? The pass key is";
  d.answers = {key};
  d.max_new_tokens = 12;
  return d;
}

Draft niah(TaskRng& rng, int n_keys, int n_values, int n_queried) {
  Draft d;
  std::set<std::string> used;
  std::vector<std::string> keys;
  keys.reserve(n_keys);
  for (int k = 0; k < n_keys; ++k) keys.push_back(distinct_key(rng, used));
  std::vector<std::pair<std::string, std::string>> planted;  // (key, value)
  std::set<std::string> values;
  for (const auto& key : keys) {
    for (int v = 0; v < n_values; ++v) {
      std::string val;
      do val = digits(rng, 7);
      while (!values.insert(val).second);
      planted.emplace_back(key, val);
    }
  }
  rng.shuffle(planted);
  const auto depths = sorted_depths(rng, static_cast<int>(planted.size()));
  for (size_t i = 0; i < planted.size(); ++i) {
    d.needles.push_back({depths[i], magic_needle(planted[i].first, planted[i].second)});
  }
  d.head = kNiahHead;
  std::vector<std::string> asked(keys.begin(), keys.begin() + n_queried);
  for (const auto& [key, val] : planted) {
    if (std::find(asked.begin(), asked.end(), key) != asked.end()) d.answers.push_back(val);
  }
  if (n_queried == 1 && n_values == 1) {
    d.tail = "\n\nWhat is the special magic number for " + asked[0] +
             " mentioned in the provided text? The special magic number for " + asked[0] +
             " mentioned in the provided text is";
    d.max_new_tokens = 16;
  } else {
    std::string list;
    for (size_t i = 0; i < asked.size(); ++i) {
      list +=
          (i == 0 ? "" : (i + 1 == asked.size() ? (asked.size() > 2 ? ", and " : " and ") : ", ")) +
          asked[i];
    }
    d.tail = "\n\nWhat are all the special magic numbers for " + list +
             " mentioned in the provided text? The special magic numbers for " + list +
             " mentioned in the provided text are";
    d.metric = TaskMetric::All;
    d.max_new_tokens = std::max(64, 12 * static_cast<int>(d.answers.size()));
  }
  return d;
}

// Variable tracking over `hops` assignments (RULER's kind with a longer chain), beside a
// distractor chain of the same length that carries another value: every variable of the asked
// chain is an answer (partial credit: the share found).
Draft variable_tracking(TaskRng& rng, int hops) {
  Draft d;
  std::set<std::string> names;
  auto fresh_chain = [&]() {
    std::vector<std::string> vars;
    while (static_cast<int>(vars.size()) < hops) {
      std::string v;
      for (int i = 0; i < 5; ++i) v += static_cast<char>('A' + rng.below(26));
      if (names.insert(v).second) vars.push_back(v);
    }
    return vars;
  };
  const std::vector<std::string> vars = fresh_chain();
  const std::string value = digits(rng, 5);
  auto plant = [&](const std::vector<std::string>& chain, const std::string& val) {
    const auto depths = sorted_depths(rng, hops);
    d.needles.push_back({depths[0], "VAR " + chain[0] + " = " + val + "."});
    for (int i = 1; i < hops; ++i) {
      d.needles.push_back({depths[i], "VAR " + chain[i] + " = VAR " + chain[i - 1] + "."});
    }
  };
  plant(vars, value);
  if (hops > 5) {
    std::string other;
    do other = digits(rng, 5);
    while (other == value);
    plant(fresh_chain(), other);
  }
  d.head = "Memorize and track the chain of variable assignments hidden in the following text.\n\n";
  d.tail = "\n\nQuestion: Find all variables that are assigned the value " + value +
           " in the text above. Answer: According to the chain of variable assignments in the "
           "text above, " +
           std::to_string(hops) + " variables are assigned the value " + value + ", they are:";
  d.answers = vars;
  d.metric = TaskMetric::All;
  d.max_new_tokens = 6 * hops + 2;
  return d;
}

// Several records (a person, the town they settled in, a year) scattered through the text; the
// answer lists them all as JSON. Every field's value is an answer, so the partial credit is the
// share of fields found (which record a value was put in is not checked).
Draft json_records(TaskRng& rng, int n_records) {
  Draft d;
  std::set<std::string> people, towns;
  const auto depths = sorted_depths(rng, n_records);
  for (int i = 0; i < n_records; ++i) {
    std::string who, town;
    do who = person(rng);
    while (!people.insert(who).second);
    do town = pick(rng, kTowns);
    while (!towns.insert(town).second);
    const std::string year = std::to_string(1700 + rng.below(150));
    d.needles.push_back({depths[static_cast<size_t>(i)], "Registry entry: " + who + " settled in " +
                                                             town + " in the year " + year + "."});
    d.answers.insert(d.answers.end(), {who, town, year});
  }
  d.head =
      "Several registry entries are hidden in the following text, each naming a person, the "
      "town where they settled and the year. Find every one of them.\n\n";
  d.tail =
      "\n\nQuestion: List every registry entry in the text above as a JSON array of objects "
      "with the fields \"name\", \"town\" and \"year\", in the order they appear. Answer: [";
  d.metric = TaskMetric::All;
  d.max_new_tokens = 28 * n_records + 8;
  return d;
}

// A question that needs two distant sentences: where a person lives (in one half of the text)
// and who holds a post in that town (in the other half). A second person, town and post-holder
// are planted the same way, so neither sentence alone gives the answer.
Draft two_fact(TaskRng& rng) {
  Draft d;
  std::set<std::string> used;
  auto someone = [&] {
    for (;;) {
      std::string p = person(rng);
      if (used.insert(p).second) return p;
    }
  };
  const std::string a = someone(), b = someone(), ka = someone(), kb = someone();
  const std::string ta = pick(rng, kTowns);
  std::string tb;
  do tb = pick(rng, kTowns);
  while (tb == ta);
  static const std::vector<std::string> kPosts = {"harbour master", "schoolmaster", "miller",
                                                  "postmaster",     "bell-ringer",  "ferryman"};
  const std::string post = pick(rng, kPosts);
  // Residences in one half, posts in the other, which half first drawn at random.
  const bool residence_first = rng.below(2) == 0;
  auto depth = [&](bool first_half) { return (first_half ? 0.02 : 0.6) + 0.38 * rng.unit(); };
  d.needles = {{depth(residence_first), a + " lives in the town of " + ta + "."},
               {depth(residence_first), b + " lives in the town of " + tb + "."},
               {depth(!residence_first), "The " + post + " of " + ta + " is " + ka + "."},
               {depth(!residence_first), "The " + post + " of " + tb + " is " + kb + "."}};
  d.head = "Read the following text and answer the question about it.\n\n";
  d.tail = "\n\nQuestion: Who is the " + post + " of the town where " + a + " lives? Answer:";
  d.answers = {ka};
  d.max_new_tokens = 16;
  return d;
}

// Lower-case alphabetic words of at least 4 letters from the haystack, in first-seen order.
std::vector<std::string> vocabulary(const Haystack& h) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& w : h.words()) {
    std::string s;
    for (char c : w) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (c < 'a' || c > 'z') {
        s.clear();
        break;
      }
      s += c;
    }
    if (s.size() >= 4 && seen.insert(s).second) out.push_back(s);
  }
  return out;
}

Draft common_words(TaskRng& rng, const std::vector<std::string>& vocab, int n_ctx) {
  Draft d;
  std::vector<std::string> words = vocab;
  rng.shuffle(words);
  const std::vector<std::string> common(words.begin(), words.begin() + 10);
  const int freq_common = n_ctx >= 4096 ? 30 : std::max(6, n_ctx * 30 / 4096);
  const uint64_t order_seed = rng.next();
  d.body = [=](int64_t n, std::vector<std::string>*) {
    std::vector<std::string> list;
    for (const auto& w : common) list.insert(list.end(), freq_common, w);
    for (int64_t i = 0; i < n; ++i) list.insert(list.end(), 3, words[10 + i]);
    TaskRng order(order_seed);
    order.shuffle(list);
    std::string s;
    for (size_t i = 0; i < list.size(); ++i) s += std::to_string(i + 1) + ". " + list[i] + "\n";
    return s;
  };
  d.head =
      "Below is a numbered list of words. In these words, some appear more often than "
      "others. Memorize the ones that appear most often.\n";
  d.tail =
      "\nQuestion: What are the 10 most common words in the above list? Answer: The top 10 "
      "words that appear most often in the list are:";
  d.answers = common;
  d.metric = TaskMetric::All;
  d.max_new_tokens = 120;
  return d;
}

Draft freq_words(TaskRng& rng) {
  Draft d;
  const int n_vocab = 500;
  std::set<std::string> seen;
  std::vector<std::string> coded;  // [n_vocab], rank order
  while (static_cast<int>(coded.size()) < n_vocab) {
    std::string w;
    for (int i = 0; i < 5; ++i) w += static_cast<char>('a' + rng.below(26));
    if (seen.insert(w).second) coded.push_back(w);
  }
  std::vector<double> cdf(n_vocab);  // Zipf, exponent 2 (RULER's setting)
  double total = 0.0;
  for (int r = 0; r < n_vocab; ++r) cdf[r] = (total += 1.0 / ((r + 1.0) * (r + 1.0)));
  const uint64_t draw_seed = rng.next();
  d.body = [=](int64_t n, std::vector<std::string>* answers) {
    TaskRng draw(draw_seed);
    std::vector<int> text(n), count(n_vocab, 0);
    for (auto& t : text) {
      const double u = draw.unit() * total;
      t = static_cast<int>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
      t = std::min(t, n_vocab - 1);
      ++count[t];
    }
    std::vector<int> rank(n_vocab);
    for (int r = 0; r < n_vocab; ++r) rank[r] = r;
    std::stable_sort(rank.begin(), rank.end(), [&](int a, int b) { return count[a] > count[b]; });
    // A tie at the third place would make the answer ambiguous: one more of the third word.
    if (count[rank[2]] == count[rank[3]]) {
      text.push_back(rank[2]);
      ++count[rank[2]];
    }
    if (answers) *answers = {coded[rank[0]], coded[rank[1]], coded[rank[2]]};
    std::string s;
    for (size_t i = 0; i < text.size(); ++i) s += (i ? " " : "") + coded[text[i]];
    return s;
  };
  d.head =
      "Read the following coded text and track the frequency of each coded word. Find the "
      "three most frequently appearing coded words.\n\n";
  d.tail =
      "\n\nQuestion: What are the three most frequently appearing words in the above coded "
      "text? Answer: According to the coded text above, the three most frequently "
      "appearing words are:";
  d.metric = TaskMetric::All;
  d.max_new_tokens = 48;
  return d;
}

Draft qa(TaskRng& rng) {
  Draft d;
  const std::string who = person(rng), town = pick(rng, kTowns);
  std::string passage, question, answer;
  switch (rng.below(4)) {
    case 0: {
      const std::string year = std::to_string(1700 + rng.below(150));
      passage = who + " was appointed keeper of the " + town + " lighthouse in " + year +
                " and kept its lamp burning through every storm.";
      question = "Who was appointed keeper of the " + town + " lighthouse in " + year + "?";
      answer = who;
      break;
    }
    case 1: {
      const std::string arches = std::to_string(3 + rng.below(17));
      passage = "The old bridge at " + town + ", designed by " + who + ", stands on " + arches +
                " stone arches.";
      question = "How many stone arches does the old bridge at " + town + " stand on?";
      answer = arches;
      break;
    }
    case 2: {
      const std::string name = pick(rng, kFirst), animal = pick(rng, kAnimals);
      passage = who + " kept a " + pick(rng, kColors) + " " + animal + " named " + name +
                " in the yard behind the inn at " + town + ".";
      question = "What was the name of the " + animal + " that " + who + " kept at " + town + "?";
      answer = name;
      break;
    }
    default: {
      passage = "The clockmaker " + who + " spent the last years of a long life in the town of " +
                town + ", mending the church clock for nothing.";
      question = "In which town did the clockmaker " + who + " spend the last years of life?";
      answer = town;
      break;
    }
  }
  d.needles = {{rng.unit(), passage}};
  d.head = "Read the following text and answer the question about it.\n\n";
  d.tail = "\n\nQuestion: " + question + " Answer:";
  d.answers = {answer};
  d.max_new_tokens = 24;
  return d;
}

uint64_t kind_salt(const std::string& kind) {  // FNV-1a: each kind draws its own stream
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : kind) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace

const std::vector<std::string>& task_kinds() {
  static const std::vector<std::string> kinds =
      {"passkey",           "niah-single",       "niah-multikey",
       "niah-multivalue",   "niah-multiquery",   "variable-tracking",
       "common-words",      "freq-words",        "qa",
       "niah-multivalue-8", "niah-multiquery-8", "variable-tracking-10",
       "json-records",      "two-fact"};
  return kinds;
}

void check_task_kind(const std::string& kind) {
  const auto& kinds = task_kinds();
  if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) return;
  std::string known;
  for (const auto& k : kinds) known += (known.empty() ? "" : ", ") + k;
  fail("unknown task kind '{}' (known: {})", kind, known);
}

std::vector<GeneratedTask> generate_tasks(
    const TaskGenOptions& opts, const std::string& haystack_text, const std::string& haystack_name,
    const std::function<int64_t(const std::string&)>& count_tokens,
    const std::function<void(int, int)>& progress) {
  check_task_kind(opts.kind);
  if (opts.count < 1) fail("--n must be >= 1 (got {})", opts.count);
  if (opts.n_ctx < 64) fail("--ctx must be >= 64 (got {})", opts.n_ctx);
  const Haystack hay(haystack_text, haystack_name);
  const std::vector<std::string> vocab =
      opts.kind == "common-words" ? vocabulary(hay) : std::vector<std::string>{};
  if (opts.kind == "common-words" && vocab.size() < 50) {
    fail("haystack '{}' has {} distinct words of 4+ letters; common-words needs 50", haystack_name,
         vocab.size());
  }
  std::vector<GeneratedTask> out;
  for (int i = 0; i < opts.count; ++i) {
    TaskRng rng(opts.seed * 0x9E3779B97F4A7C15ull ^ kind_salt(opts.kind) ^ (uint64_t(i) << 20));
    Draft d;
    const std::string& k = opts.kind;
    if (k == "passkey")
      d = passkey(rng);
    else if (k == "niah-single")
      d = niah(rng, 1, 1, 1);
    else if (k == "niah-multikey")
      d = niah(rng, 4, 1, 1);
    else if (k == "niah-multivalue")
      d = niah(rng, 1, 4, 1);
    else if (k == "niah-multiquery")
      d = niah(rng, 4, 1, 4);
    else if (k == "variable-tracking")
      d = variable_tracking(rng, 5);
    else if (k == "niah-multivalue-8")
      d = niah(rng, 1, 8, 1);
    else if (k == "niah-multiquery-8")
      d = niah(rng, 8, 1, 8);
    else if (k == "variable-tracking-10")
      d = variable_tracking(rng, 10);
    else if (k == "json-records")
      d = json_records(rng, 4);
    else if (k == "two-fact")
      d = two_fact(rng);
    else if (k == "common-words")
      d = common_words(rng, vocab, opts.n_ctx);
    else if (k == "freq-words")
      d = freq_words(rng);
    else
      d = qa(rng);
    const size_t start = hay.next_sentence_start(rng.below(hay.n_words()));
    auto body = [&](int64_t n, std::vector<std::string>* answers) {
      return d.body ? d.body(n, answers) : hay.context(start, static_cast<size_t>(n), d.needles);
    };
    auto prompt = [&](int64_t n) { return d.head + body(n, nullptr) + d.tail; };
    const int64_t target = opts.n_ctx - d.max_new_tokens;
    const int64_t max_n =
        k == "common-words" ? static_cast<int64_t>(vocab.size()) - 10 : int64_t{1} << 24;
    const int64_t n = fit_units([&](int64_t u) { return count_tokens(prompt(u)); }, target, max_n,
                                "--ctx " + std::to_string(opts.n_ctx) + " is too small for " + k);
    GeneratedTask g;
    g.task.id = k + "-" + std::to_string(opts.n_ctx) + "-" + std::to_string(opts.seed) + "-" +
                std::to_string(i);
    g.task.task = k;
    g.task.answers = d.answers;
    g.task.prompt = d.head + body(n, d.body ? &g.task.answers : nullptr) + d.tail;
    g.task.question = d.tail;
    g.task.metric = d.metric;
    g.task.max_new_tokens = d.max_new_tokens;
    g.n_prompt_tokens = static_cast<int>(count_tokens(g.task.prompt));
    out.push_back(std::move(g));
    if (progress) progress(i + 1, opts.count);
  }
  return out;
}

}  // namespace fasa
