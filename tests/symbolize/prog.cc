// A small C++ program for test_symbolize: names in a namespace, a class, a
// template and an operator, each kept out of line.
#include <cstdio>
#include <vector>

namespace shapes {
template <typename T> struct Box {
	T v;
	__attribute__((noinline)) T area(int k) const { return v * k; }
};
struct Circle {
	double r;
	__attribute__((noinline)) double area() const { return 3.14159 * r * r; }
	__attribute__((noinline)) bool operator<(const Circle &o) const { return r < o.r; }
};
__attribute__((noinline)) double total(const std::vector<Circle> &cs)
{
	double t = 0;
	for (const Circle &c : cs)
		t += c.area();
	return t;
}
} // namespace shapes

int main(int argc, char **)
{
	std::vector<shapes::Circle> cs{{1.0 * argc}, {2.0}};
	shapes::Box<long> b{argc};
	std::printf("%f %ld %d\n", shapes::total(cs), b.area(3), cs[0] < cs[1]);
	return 0;
}
