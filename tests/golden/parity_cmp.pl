#!/usr/bin/perl
# parity_cmp.pl: the comparisons of parity.sh for one profile, in one process.
#
#   parity_cmp.pl REL DIR
#
# DIR holds raw (go tool pprof -raw), report (go tool pprof -top of the default
# sample type), inter (an interactive go tool pprof session printing, for each
# sample type in turn, the table with pprof's cuts and then the table in raw
# units with none), text and tsv (profd pprof top --sample-index=all, text and
# tsv). Appends "REL<TAB>CHECK<TAB>same|differs<TAB>WHY-FILE" lines to
# DIR/results: report, top:I:T and tsv:I:T for every sample type.
use strict;
use warnings;

my ($rel, $dir) = @ARGV;
sub slurp { my $f = shift; open(my $h, '<', $f) or return ''; local $/; my $s = <$h>; return $s; }
# type names may hold any byte: printable ones only in check names
sub printable { my $s = shift; $s =~ s/[^\x21-\x7e]/?/g; return $s; }
sub readable { my $s = shift; $s =~ s/[^\x20-\x7e]/?/g; return $s; }

my $raw = slurp("$dir/raw");
my @types;
my $dflt;
if ($raw =~ /^Samples:\n([^\n]*)\n/m) {
	my @t = split ' ', $1;
	for my $i (0 .. $#t) {
		$dflt = $i if $t[$i] =~ s/\[dflt\]$//;
		push @types, $t[$i];
	}
}
$dflt = $#types unless defined $dflt;

my $n = 0;
open(my $res, '>>', "$dir/results") or die "$dir/results: $!";
sub result {
	my ($check, $want, $got) = @_;
	if ($want eq $got) {
		print $res "$rel\t$check\tsame\t\n";
		return;
	}
	my @w = split /\n/, $want, -1;
	my @g = split /\n/, $got, -1;
	my $i = 0;
	$i++ while $i < @w && $i < @g && $w[$i] eq $g[$i];
	my $why = "$dir/why." . $n++;
	open(my $o, '>', $why) or die;
	printf $o "first difference at line %d:\n  go tool pprof: %s\n  profd:         %s\n", $i + 1,
		readable($w[$i] // '(end)'), readable($g[$i] // '(end)');
	close $o;
	print $res "$rel\t$check\tdiffers\t$why\n";
}

# profd's output of every type: split at its "==> sample type N: T <==" lines
sub sections { my @p = split /^==> sample type \d+: [^\n]* <==\n/m, slurp(shift), -1; shift @p; return @p; }
my @text = sections("$dir/text");
my @tsv = sections("$dir/tsv");
# go tool pprof's tables, two per type, each from its "Showing nodes" line
(my $inter = slurp("$dir/inter")) =~ s/\(pprof\) //g;
my @go = grep { /^Showing nodes/ } split /^(?=Showing nodes accounting for )/m, $inter, -1;

# a table as name<TAB>flat<TAB>cum rows in raw units, sorted; a row starts with
# its five figures, so a line break inside a name does not end it
sub go_rows {
	my $s = shift // '';
	$s =~ s/\A.*?^\s+flat\s+flat%[^\n]*\n//ms or return '';
	my @rows;
	for (split /\n(?=[ ]*[^\s]+[ ]+[^\s]+%[ ]+[^\s]+%[ ]+[^\s]+[ ]+[^\s]+%  )/, $s) {
		next unless /\A\s*(\S+)\s+\S+\s+\S+\s+(\S+)\s+\S+  (.*?)\n?\z/s;
		my ($f, $c, $nm) = ($1, $2, $3);
		$nm =~ s/ \((partial-)?inline\)$//;
		s/[A-Za-z]+$// for ($f, $c);
		$nm =~ s/\\/\\\\/g; $nm =~ s/\t/\\t/g; $nm =~ s/\n/\\n/g;
		push @rows, "$nm\t$f\t$c\n";
	}
	return join '', sort @rows;
}
sub profd_rows {
	my $s = shift // '';
	my @rows;
	while ($s =~ /\G(.*?)\t(-?\d+)\t(-?\d+)\n/gs) {
		my ($nm, $f, $c) = ($1, $2, $3);
		$nm =~ s/\\/\\\\/g; $nm =~ s/\t/\\t/g; $nm =~ s/\n/\\n/g;
		push @rows, "$nm\t$f\t$c\n";
	}
	return join '', sort @rows;
}

result('report', slurp("$dir/report"), $text[$dflt] // '');
for my $i (0 .. $#types) {
	my $t = printable($types[$i]);
	my $body = $text[$i] // '';
	$body =~ s/\A.*?^(?=Showing nodes accounting for )//ms;
	result("top:$i:$t", $go[2 * $i] // '', $body);
	result("tsv:$i:$t", go_rows($go[2 * $i + 1]), profd_rows($tsv[$i]));
}
