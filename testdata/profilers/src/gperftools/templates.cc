// templates.cc: a C++ program of templates, namespaces and virtual calls, run under
// gperftools' CPU profiler (CPUPROFILE=) and heap profiler (HEAPPROFILE=, tcmalloc),
// for profiles of a native program as Debian's gperftools writes them.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace shapes {
template <typename T> struct Accumulator {
	T total{};
	void add(const T &v) { total = total * 31 + v; }
};

struct Shape {
	virtual ~Shape() = default;
	virtual double area() const = 0;
};

template <int N> struct Polygon : Shape {
	double side;
	explicit Polygon(double s) : side(s) {}
	double area() const override
	{
		double a = 0;
		for (int i = 0; i < N * 1000; i++)
			a += side * (i % 7);
		return a;
	}
};
} // namespace shapes

template <typename K, typename V> static std::map<K, V> build(int n)
{
	std::map<K, V> m;
	for (int i = 0; i < n; i++)
		m.emplace(K(i), V(std::to_string(i * 7919)));
	return m;
}

int main()
{
	using clock = std::chrono::steady_clock;
	auto end = clock::now() + std::chrono::milliseconds(1500);
	shapes::Accumulator<uint64_t> acc;
	std::vector<std::unique_ptr<shapes::Shape>> keep;
	while (clock::now() < end) {
		std::vector<std::unique_ptr<shapes::Shape>> v;
		v.emplace_back(new shapes::Polygon<3>(1.5));
		v.emplace_back(new shapes::Polygon<8>(2.5));
		for (auto &s : v)
			acc.add(static_cast<uint64_t>(s->area()));
		auto m = build<int, std::string>(2000);
		acc.add(m.size());
		if (keep.size() < 200)
			keep.emplace_back(new shapes::Polygon<5>(double(keep.size())));
	}
	return acc.total == 42;
}
