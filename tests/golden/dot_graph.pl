#!/usr/bin/env perl
# dot_graph.pl: reads a call graph in DOT, as go tool pprof -dot or profd writes it,
# and prints its function nodes and edges one a line, for comparison:
#   node <TAB> name <TAB> flat (flat%) <TAB> cum (cum%)
#   edge <TAB> caller <TAB> callee <TAB> weight <TAB> inline|- <TAB> dotted|-
# Names come from the tooltips (the full function name), values as printed in the
# labels, so units and percentages are compared too. pprof's label-tag boxes
# ("NN1_0") and the legend are not part of the graph compared.
use strict;
use warnings;
my (%name, @out);
while (<>) {
	if (/^N(\d+) \[label="(.*?)" id="node\d+".* tooltip="(.*) \(([^()]*)\)" color=/) {
		my ($id, $label, $n) = ($1, $2, $3);
		$name{$id} = $n;
		if ($label =~ /\\n(0|[^\\ ]+ \([^)]*\))(?:(?:\\n| )of ([^ ]+ \([^)]*\)))?$/) {
			push @out, "node\t$n\t$1\t" . ($2 // $1);
		} else { push @out, "node\t$n\tUNPARSED $label"; }
	} elsif (/^N(\d+) -> N(\d+) \[label=" ([^"\\]*)(\\n \(inline\))?"(.*)\]$/) {
		my ($from, $to, $w, $inl, $rest) = ($1, $2, $3, $4, $5);
		# pprof draws an edge to a function whose values cancelled out in a diff to
		# "N0", a box that does not exist; profd leaves such edges out
		next if $from == 0 || $to == 0;
		push @out, [$from, $to, $w, $inl ? "inline" : "-", $rest =~ /style="dotted"/ ? "dotted" : "-"];
	}
}
for (@out) {
	if (ref $_) { my @e = @$_; print "edge\t$name{$e[0]}\t$name{$e[1]}\t$e[2]\t$e[3]\t$e[4]\n"; }
	else { print "$_\n"; }
}
