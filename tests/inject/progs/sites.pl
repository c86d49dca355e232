# A Perl program for injection (Debian's perl, which allocates through the
# C library's malloc): it writes GO_FILE.ready, waits for GO_FILE, allocating meanwhile so that
# the malloc host polls and sees the tracer, then builds strings and arrays.
#
#   perl sites.pl GO_FILE ROUNDS
#
# Every allocation of the interpreter goes through its wrappers
# (Perl_safesysmalloc, Perl_safesysrealloc): a report's site must be the
# code past them.
use strict;
use warnings;

my ($go, $rounds) = @ARGV;
open(my $ready, ">", "$go.ready.tmp") or die "sites.pl: $go.ready: $!\n";
print $ready "$$\n";
close($ready) or die "sites.pl: $go.ready: $!\n";
rename("$go.ready.tmp", "$go.ready") or die "sites.pl: $go.ready: $!\n";
my $deadline = time + 120;
until (-e $go) {
	my @warm = map { "w" x 64 } 1 .. 2000;
	select(undef, undef, undef, 0.001);
	die "sites.pl: no $go\n" if time > $deadline;
}
my $n = 0;
for my $i (1 .. $rounds) {
	my @keep;
	push @keep, "p" x (1000 + ($_ * 37 + $i) % 5000) for 1 .. 200;
	$n += @keep;
}
print "strings $n\n";
