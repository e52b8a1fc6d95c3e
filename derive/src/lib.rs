//! `#[derive(EntityRefs)]` for ludus components (see `ludus::durable::EntityRefs`).
//!
//! The derive visits **every** field through `ludus::durable::EntityFields`: an `EntityId`
//! field is visited, a number or an array of numbers is not, an array of `EntityId`s visits each
//! element, and a field of any other type must implement `EntityFields` itself — which a type
//! deriving `EntityRefs` does. A field whose type declares nothing is a compile error, so an
//! entity field cannot be left out, however deeply it is nested. A field of a foreign type that
//! holds no entity (a math vector, say) is skipped by saying so: `#[entity_refs(skip)]`.
//!
//! A generic struct gets one bound per visited field type (`FieldType: EntityFields`), so
//! `Pair<T>` declares its fields for every `T` that declares its own. A `#[repr(packed)]`
//! struct's fields are visited through a copy written back (a packed field cannot be borrowed).

use proc_macro::TokenStream;
use quote::quote;
use syn::{parse_macro_input, Data, DeriveInput, Field, Index};

/// Implements `EntityRefs` (and `EntityFields`, so the type can be a field of another) by
/// visiting every field (crate docs).
#[proc_macro_derive(EntityRefs, attributes(entity_refs))]
pub fn derive_entity_refs(input: TokenStream) -> TokenStream {
    let mut input = parse_macro_input!(input as DeriveInput);
    let packed = match is_packed(&input) {
        Ok(p) => p,
        Err(e) => return e.to_compile_error().into(),
    };
    let generic = !input.generics.params.is_empty();
    let mut generics = core::mem::take(&mut input.generics);
    let name = &input.ident;
    let fields = match &input.data {
        Data::Struct(s) => &s.fields,
        _ => {
            return syn::Error::new_spanned(
                &input.ident,
                "EntityRefs can be derived for structs only",
            )
            .to_compile_error()
            .into()
        }
    };
    let mut visits = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        match skipped(f) {
            Ok(true) => continue,
            Ok(false) => {}
            Err(e) => return e.to_compile_error().into(),
        }
        let access = match &f.ident {
            Some(name) => quote! { #name },
            None => {
                let index = Index::from(i);
                quote! { #index }
            }
        };
        if generic {
            let ty = &f.ty;
            generics
                .make_where_clause()
                .predicates
                .push(syn::parse_quote! { #ty: ::ludus::durable::EntityFields });
        }
        visits.push(if packed {
            // A packed field may be unaligned: visited in an aligned copy, written back.
            quote! {
                let mut field = self.#access;
                ::ludus::durable::EntityFields::visit_fields(&mut field, visit);
                self.#access = field;
            }
        } else {
            quote! { ::ludus::durable::EntityFields::visit_fields(&mut self.#access, visit); }
        });
    }
    if generic {
        // `EntityRefs`'s supertraits, for the impl to be well formed whatever the parameters.
        let (_, ty_generics, _) = generics.split_for_impl();
        let this: syn::Type = syn::parse_quote! { #name #ty_generics };
        generics
            .make_where_clause()
            .predicates
            .push(syn::parse_quote! {
                #this: ::ludus::world::Component + ::ludus::world::__private::Zeroable
            });
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    quote! {
        impl #impl_generics ::ludus::durable::EntityRefs for #name #ty_generics #where_clause {
            fn visit_entities(
                &mut self,
                visit: &mut dyn ::core::ops::FnMut(&mut ::ludus::world::EntityId),
            ) {
                let _ = &visit;
                #(#visits)*
            }
        }
        impl #impl_generics ::ludus::durable::EntityFields for #name #ty_generics #where_clause {
            fn visit_fields(
                &mut self,
                visit: &mut dyn ::core::ops::FnMut(&mut ::ludus::world::EntityId),
            ) {
                ::ludus::durable::EntityRefs::visit_entities(self, visit);
            }
        }
    }
    .into()
}

/// Whether the struct is `#[repr(packed)]` (or `packed(N)`, alone or beside `C`).
fn is_packed(input: &DeriveInput) -> syn::Result<bool> {
    let mut packed = false;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("repr")) {
        attr.parse_nested_meta(|meta| {
            packed |= meta.path.is_ident("packed");
            // `packed(N)`, `align(N)`: the argument is read and ignored.
            if meta.input.peek(syn::token::Paren) {
                let arg;
                syn::parenthesized!(arg in meta.input);
                arg.parse::<proc_macro2::TokenStream>()?;
            }
            Ok(())
        })?;
    }
    Ok(packed)
}

/// Whether `f` is marked `#[entity_refs(skip)]` (any other `entity_refs` attribute is an
/// error).
fn skipped(f: &Field) -> syn::Result<bool> {
    let mut skip = false;
    for attr in f.attrs.iter().filter(|a| a.path().is_ident("entity_refs")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("skip") {
                skip = true;
                Ok(())
            } else {
                Err(meta.error("expected `skip`"))
            }
        })?;
    }
    Ok(skip)
}
