// Package sitereport carries an air-gapped site's TargetReports back to the
// connected side: the way back of solar export and solar push.
//
// On the site, Export writes the site's TargetReports as one signed archive
// file: a solar export archive (renderer/archive: the same tar, the same
// bounded, checked reading) of one repository, solar-reports/<site>, whose
// one version is an OCI artifact (api.ArtifactTypeSiteReports) with the
// archive's Header as its config (the site, and when the reports left it)
// and one layer per TargetReport (api.MediaTypeTargetReport: apiVersion,
// kind, namespace, name and spec, nothing else), signed with the site's key
// as solar signs a chart (renderer/sign: the signature names the
// repository, so the site is signed too).
//
// Since format v2 the artifact can also carry the site's device states
// (Device: what solar fleet status shows of each device the fleet's bucket
// knows; DevicesOf) and every tag of the site's registry with its manifest
// digest (Pushed; ListPushed reads them with the catalog API), as layers of
// JSON arrays (api.MediaTypeSiteDevices, api.MediaTypeSitePushed) the
// Header counts, signed with the rest. Import reads v1 archives too.
//
// On the connected side, Import reads such a file bounded and checked as
// solar push reads an archive, verifies its signature with the site's public
// key, refuses an archive not exported after the last one imported from the
// same site (a replay), reads every report strictly, naming every problem at
// once, and only then writes the site's reports, with the time they left the
// site, into one file of a folder (<site>.json, 0600), whole or not at all.
// Open reads that folder back; its Report is what status.Options.Report
// takes, so solar status and the rollout gates read the imported reports as
// if the site's agents had written them to the API server, marked with the
// site and the export time (api.AnnotationReportSite,
// api.AnnotationReportExportedAt). Reports.Devices are the device states
// imported, each with its site and export time; ReadConfirmed is what a
// site confirmed its registry holds (the newest list imported), for an
// export that carries only what the site lacks.
package sitereport
